//! `robobrain assist --model`: the assist runner's assistant with the
//! configured model behind it. Each sentence goes to the inner assistant
//! first (the engine with Home Assistant's grammar and robobrain's rules);
//! a sentence it missed — nothing understood, or only an `unknown` intent —
//! goes to the model in the intent role, with the home's devices, their
//! states and actions in the prompt and one `invoke` tool. The model is
//! untrusted: each call it asks for is checked by the device world (device,
//! action, argument schema) before it runs, and a high-risk action counts a
//! confirmation the runner approves, as on the command path. Each such
//! sentence's [`ModelUse`] says what the model did, and [`contribution`]
//! sums them: what the model adds, measured on the same sentences as Home
//! Assistant's published runs.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::assist::runner::{AssistReport, Assistant, ModelUse, Turn};
use crate::brain::llm::request::{arguments, message};
use crate::devices::{DeviceWorld, Invocation};
use crate::llm::prompt::Prompts;
use crate::llm::{LlmClient, LlmConfig, LlmWorker, Update};
use crate::skills::Risk;

/// The one tool the model is offered.
const INVOKE: &str = "invoke";

/// Why the model assistant could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelAssistError {
    /// No endpoint is configured.
    #[error(
        "no model is configured: set [llm] base_url (or OPENAI_BASE_URL) and, for a hosted model, OPENAI_API_KEY"
    )]
    NotConfigured,
    /// The client, its worker or the prompts could not be set up.
    #[error("cannot set up the model: {0}")]
    Setup(String),
}

/// The inner assistant, and the model for what it misses.
pub struct ModelAssistant {
    inner: Box<dyn Assistant>,
    name: String,
    worker: LlmWorker,
    prompts: Prompts,
    model: String,
    temperature: f64,
    /// The client's own deadline, with a margin for the worker's hand-off.
    wait: Duration,
    here: Option<(String, String)>,
    requests: u64,
}

impl std::fmt::Debug for ModelAssistant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAssistant")
            .field("name", &self.name)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl ModelAssistant {
    /// `inner` first, then `config`'s decision model for what it misses.
    pub fn new(inner: Box<dyn Assistant>, config: &LlmConfig) -> Result<Self, ModelAssistError> {
        if !config.is_configured() {
            return Err(ModelAssistError::NotConfigured);
        }
        let setup = |e: &dyn std::fmt::Display| ModelAssistError::Setup(e.to_string());
        let client = LlmClient::new(config).map_err(|e| setup(&e))?;
        let worker = LlmWorker::spawn(client).map_err(|e| setup(&e))?;
        let prompts = Prompts::load(config.prompts_dir.as_deref().map(std::path::Path::new))
            .map_err(|e| setup(&e))?;
        Ok(Self {
            name: format!("{}+model", inner.name()),
            inner,
            worker,
            prompts,
            model: config.decision_model.clone(),
            temperature: config.temperature,
            wait: Duration::from_secs_f64(config.timeout_s + 1.0),
            here: None,
            requests: 0,
        })
    }

    /// The model's request for `sentence` in `world`.
    fn request(&self, sentence: &str, world: &DeviceWorld) -> Result<Value, String> {
        let here = self
            .here
            .as_ref()
            .map(|(_, name)| format!(" in the {name}"))
            .unwrap_or_default();
        let system = self
            .prompts
            .render(
                "assist_system.txt",
                &[("here", &here), ("devices", &device_lines(world))],
            )
            .map_err(|e| e.to_string())?;
        let ids: Vec<&str> = world.devices().iter().map(|d| d.id.as_str()).collect();
        Ok(json!({
            "model": self.model,
            "messages": [message("system", &system), message("user", sentence)],
            "tools": [{
                "type": "function",
                "function": {
                    "name": INVOKE,
                    "description": "Carry out one action of one device.",
                    "parameters": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["device", "action"],
                        "properties": {
                            "device": {"type": "string", "enum": ids},
                            "action": {"type": "string", "description": "one of the device's actions"},
                            "args": {"type": "object", "description": "the action's arguments"}
                        }
                    }
                }
            }],
            "tool_choice": "auto",
            "temperature": self.temperature,
            "stream": false,
        }))
    }

    /// Asks the model about `sentence` and carries out what it asks for.
    fn ask(&mut self, sentence: &str, world: &mut DeviceWorld, turn: &mut Turn) -> ModelUse {
        let mut used = ModelUse::default();
        let body = match self.request(sentence, world) {
            Ok(b) => b,
            Err(e) => {
                used.outcome = format!("prompt: {e}");
                return used;
            }
        };
        let started = Instant::now();
        let result = self
            .worker
            .submit("intent", body)
            .map_err(|e| e.kind().to_string())
            .and_then(|id| self.wait_for(id, started));
        used.latency_ms = started.elapsed().as_millis() as u64;
        let completion = match result {
            Ok(c) => c,
            Err(outcome) => {
                used.outcome = outcome;
                return used;
            }
        };
        used.outcome = "ok".into();
        // The model took the sentence: the rules' "didn't understand" no
        // longer stands (the judge reads a "Sorry" as a failure).
        turn.said.clear();
        turn.note = None;
        let text = completion.first_text();
        if !text.is_empty() {
            turn.said.push(text);
        }
        let calls = completion
            .choices
            .get(&0)
            .map(|c| c.tool_calls.clone())
            .unwrap_or_default();
        for call in calls {
            used.calls += 1;
            if let Err(why) = self.carry_out(&call.name, &call.arguments, world, turn) {
                used.refused += 1;
                let note = format!(
                    "the model's {}({}) was refused: {why}",
                    call.name, call.arguments
                );
                turn.note = Some(match turn.note.take() {
                    Some(before) => format!("{before}; {note}"),
                    None => note,
                });
            }
        }
        used
    }

    /// Waits for call `id`'s reply (the client's deadline bounds it).
    fn wait_for(
        &self,
        id: u64,
        started: Instant,
    ) -> Result<crate::llm::accumulate::Completion, String> {
        while let Some(left) = self.wait.checked_sub(started.elapsed()) {
            match self.worker.recv_timeout(left) {
                Some(Update::Done {
                    id: done, result, ..
                }) if done == id => return result.reply.map_err(|e| e.kind().to_string()),
                Some(_) => {}
                None => break,
            }
        }
        Err("timeout".into())
    }

    /// One `invoke` the model asked for, checked by the device world and
    /// gated by risk like the command path's.
    fn carry_out(
        &mut self,
        tool: &str,
        arguments: &str,
        world: &mut DeviceWorld,
        turn: &mut Turn,
    ) -> Result<(), String> {
        if tool != INVOKE {
            return Err(format!("there is no tool `{tool}`"));
        }
        let args: Value = serde_json::from_str(if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        })
        .map_err(|e| format!("its arguments are not JSON ({e})"))?;
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("`{key}` is missing"))
        };
        let (device, action) = (text("device")?, text("action")?);
        let action_args = args.get("args").cloned().unwrap_or_else(|| json!({}));
        world
            .check(&device, &action, &action_args)
            .map_err(|e| e.to_string())?;
        if world
            .get(&device)
            .and_then(|d| d.capability(&action))
            .is_some_and(|c| c.risk == Risk::HighWrite)
        {
            turn.confirmations += 1;
        }
        self.requests += 1;
        turn.calls.push(format!("{device}.{action}({action_args})"));
        world
            .invoke(&Invocation {
                request_id: format!("assist-model-{}", self.requests),
                plan_id: format!("assist-model-plan-{}", self.requests),
                step_id: "1".into(),
                device,
                capability: action,
                args: action_args,
            })
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Whether the inner assistant understood nothing of the sentence: no call,
/// or only the robot's `unknown` intents.
pub fn missed(turn: &Turn) -> bool {
    turn.calls.iter().all(|c| c.starts_with("unknown"))
}

/// Each device as one line: `id "name" (area) {state}: action(args), …`.
fn device_lines(world: &DeviceWorld) -> String {
    world
        .devices()
        .iter()
        .map(|d| {
            let area = world
                .rooms()
                .iter()
                .find(|r| r.id == d.room)
                .map_or(d.room.as_str(), |r| r.name.as_str());
            let actions: Vec<String> = d
                .capabilities
                .iter()
                .map(|c| format!("{}({})", c.name, arguments(&c.args_schema)))
                .collect();
            format!(
                "- {} \"{}\" ({area}) {}: {}",
                d.id,
                d.name,
                Value::Object(d.state.clone()),
                actions.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Assistant for ModelAssistant {
    fn name(&self) -> &str {
        &self.name
    }

    fn set_here(&mut self, here: Option<(String, String)>) {
        self.here.clone_from(&here);
        self.inner.set_here(here);
    }

    fn handle(&mut self, sentence: &str, world: DeviceWorld) -> (DeviceWorld, Turn) {
        let (mut world, mut turn) = self.inner.handle(sentence, world);
        if missed(&turn) {
            let used = self.ask(sentence, &mut world, &mut turn);
            turn.latency_ms += used.latency_ms as f64;
            turn.understander = Some("model".into());
            turn.model = Some(used);
        }
        (world, turn)
    }
}

/// What the model contributed to a run: the sentences it took, how they
/// were judged, its calls and its latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Contribution {
    /// Sentences the inner assistant missed and the model was asked about.
    pub sentences: usize,
    /// Of those, passed.
    pub passed: usize,
    /// Of those, failed.
    pub failed: usize,
    /// Model calls that gave no usable reply (timeout, server error, …).
    pub call_errors: usize,
    /// Device calls the model asked for.
    pub device_calls: usize,
    /// Of those, refused by the device world.
    pub refused: usize,
    /// Median wall milliseconds of a model call.
    pub latency_ms_median: u64,
    /// Longest model call, wall milliseconds.
    pub latency_ms_max: u64,
}

/// Sums the [`ModelUse`] of every sentence in `report`.
pub fn contribution(report: &AssistReport) -> Contribution {
    let mut c = Contribution::default();
    let mut latencies = Vec::new();
    for r in &report.results {
        let Some(used) = &r.turn.model else {
            continue;
        };
        c.sentences += 1;
        if r.passed {
            c.passed += 1;
        } else {
            c.failed += 1;
        }
        c.call_errors += usize::from(used.outcome != "ok");
        c.device_calls += used.calls;
        c.refused += used.refused;
        latencies.push(used.latency_ms);
    }
    latencies.sort_unstable();
    c.latency_ms_median = latencies.get(latencies.len() / 2).copied().unwrap_or(0);
    c.latency_ms_max = latencies.last().copied().unwrap_or(0);
    c
}

/// The contribution as the report's last lines.
pub fn render(c: &Contribution, of: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "model: took {} of {of} sentences (the rules missed them): {} passed, {} failed",
        c.sentences, c.passed, c.failed
    );
    let _ = writeln!(
        out,
        "model: {} device call(s), {} refused; {} model call(s) without a usable reply; latency median {} ms, max {} ms",
        c.device_calls, c.refused, c.call_errors, c.latency_ms_median, c.latency_ms_max
    );
    out
}
