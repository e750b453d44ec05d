//! The model brain: an OpenAI-compatible model decides (seed 003 R2), with
//! the rule brain standing in whenever the model fails.
//!
//! A decision is asked for in the endpoint's best structured form (a forced
//! `decide` tool call, a JSON-schema response format, or plain JSON): with
//! `structured = "auto"` the endpoint is probed before the first decision
//! (a `log` event says what it honours and which form is used), and the
//! brain steps down further when the endpoint refuses one. The request runs on the
//! [`LlmWorker`]'s thread: `decide` returns [`Thinking::Pending`] and `poll`
//! hands the engine the streamed `token` events and, at the end, the
//! decision. The reply is validated against the decision schema and the
//! skills' argument schemas before the guardrails see it; an invalid reply
//! gets one repair round with the validator's message, then the rule brain
//! decides (`brain: fallback`) and a `log` event says why. A model that keeps
//! failing rests for `cooldown_s`.

pub mod reply;
pub mod request;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::rule;
use super::{Brain, BrainError, Intent, Thinking};
use crate::llm::prompt::Prompts;
use crate::llm::{CallResult, LlmClient, LlmConfig, LlmWorker, PromptSize, Structured, Update};
use crate::protocol::{BrainKind, EventKind, LlmCallView, Op};
use crate::react::{Decision, Observation};
use crate::skills::{ModelNames, SkillRegistry};
use crate::world::World;
use reply::Validators;
use request::message;

/// What the registry looked like when the caches were built.
struct Skills {
    /// The registry's skill names, in order (to notice a change).
    names: Vec<String>,
    /// Those names as the model sees them, and back.
    model_names: ModelNames,
    schema: Value,
    validators: Validators,
    functions: String,
}

/// A decision being thought about.
struct Pending {
    call: u64,
    purpose: &'static str,
    messages: Vec<Value>,
    /// What the rule brain would say, should the model fail.
    fallback: Decision,
    time: f64,
    repaired: bool,
    /// While the endpoint is probed: the observation to ask about once
    /// the mode is known.
    observation: Option<Box<Observation>>,
}

/// The model brain.
pub struct LlmBrain {
    config: LlmConfig,
    worker: LlmWorker,
    prompts: Prompts,
    mode: Structured,
    /// Whether `structured = "auto"` has probed the endpoint yet.
    probed: bool,
    skills: Option<Skills>,
    pending: Option<Pending>,
    /// Updates read while waiting for something else.
    backlog: Vec<Update>,
    /// Intent calls in flight: call id, utterance.
    asked: Vec<(u64, String)>,
    /// Intent calls that ended: utterance, reply.
    heard: Vec<(String, crate::llm::CallResult)>,
    notes: Vec<EventKind>,
    failures: u32,
    cooldown_until: Option<f64>,
    keep_alive: Option<Box<dyn Send>>,
    /// The run's memory, whose context goes into each decision's input.
    memory: Option<crate::memory::MemoryHandle>,
}

fn log(level: &str, message: String) -> EventKind {
    EventKind::Log {
        level: level.into(),
        message,
    }
}

impl LlmBrain {
    /// A model brain for `config`'s endpoint (nothing is sent until it decides).
    pub fn new(config: &LlmConfig) -> Result<Self, BrainError> {
        let unavailable = |e: &dyn std::fmt::Display| BrainError::Unavailable(e.to_string());
        let client = LlmClient::new(config).map_err(|e| unavailable(&e))?;
        let worker = LlmWorker::spawn(client).map_err(|e| unavailable(&e))?;
        let prompts = Prompts::load(config.prompts_dir.as_deref().map(std::path::Path::new))
            .map_err(|e| unavailable(&e))?;
        Ok(Self {
            config: config.clone(),
            worker,
            prompts,
            mode: match config.structured {
                Structured::Auto => Structured::Tools,
                m => m,
            },
            probed: config.structured != Structured::Auto,
            skills: None,
            pending: None,
            backlog: Vec::new(),
            asked: Vec::new(),
            heard: Vec::new(),
            notes: Vec::new(),
            failures: 0,
            cooldown_until: None,
            keep_alive: None,
            memory: None,
        })
    }

    /// Keeps `guard` (a mock server, say) alive as long as the brain.
    pub fn keep_alive(&mut self, guard: Box<dyn Send>) {
        self.keep_alive = Some(guard);
    }

    /// How decisions are asked for now (after any stepping down).
    pub fn structured(&self) -> Structured {
        self.mode
    }

    fn refresh_skills(&mut self, registry: &SkillRegistry) -> Result<(), String> {
        let names: Vec<String> = registry.specs().map(|s| s.name.clone()).collect();
        if self.skills.as_ref().is_some_and(|s| s.names == names) {
            return Ok(());
        }
        // The model sees and answers with names it accepts; they are mapped
        // back to the skills' own before anything is checked or run.
        let model_names = ModelNames::new(names.iter().map(String::as_str));
        let shown: Vec<String> = names
            .iter()
            .map(|n| model_names.model(n).to_string())
            .collect();
        let schema = request::decision_schema(&shown);
        let decision = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        let mut validators = BTreeMap::new();
        for spec in registry.specs() {
            let v = jsonschema::validator_for(&spec.args_schema).map_err(|e| e.to_string())?;
            validators.insert(model_names.model(&spec.name).to_string(), v);
        }
        let functions = match self.config.effective_prompt() {
            PromptSize::Compact => request::skill_signatures(registry, &model_names),
            _ => serde_json::to_string_pretty(&request::skill_functions(registry, &model_names))
                .unwrap_or_default(),
        };
        self.skills = Some(Skills {
            names,
            model_names,
            schema,
            validators: Validators {
                decision,
                skills: validators,
            },
            functions,
        });
        Ok(())
    }

    fn output_instructions(&self) -> Result<String, String> {
        let schema = self
            .skills
            .as_ref()
            .map(|s| s.schema.to_string())
            .unwrap_or_default();
        match self.mode {
            Structured::Tools | Structured::Auto => self.prompts.render("output_tools.txt", &[]),
            _ => self
                .prompts
                .render("output_json.txt", &[("decision_schema", &schema)]),
        }
        .map_err(|e| e.to_string())
    }

    /// The memory section of a decision's input (within the memory's token
    /// budget), and a `memory` event saying what was used and why.
    fn memory_section(&mut self) -> String {
        let Some(memory) = &self.memory else {
            return String::new();
        };
        let Some(ctx) = memory.context() else {
            return String::new();
        };
        let budget = memory.token_budget();
        let rendered = crate::memory::context::render(&ctx, budget);
        if !rendered.text.is_empty() {
            self.notes.push(EventKind::Memory {
                query: ctx.query.clone(),
                mode: ctx.mode.clone(),
                used: rendered.used,
                tokens: rendered.tokens,
                budget,
                dropped: rendered.dropped,
            });
        }
        rendered.text
    }

    fn first_messages(&mut self, obs: &Observation) -> Result<Vec<Value>, String> {
        let memory = self.memory_section();
        let functions = self.skills.as_ref().map_or("", |s| s.functions.as_str());
        let instructions = self.output_instructions()?;
        let system = self
            .prompts
            .render(
                match self.config.effective_prompt() {
                    PromptSize::Compact => "decide_system_compact.txt",
                    _ => "decide_system.txt",
                },
                &[
                    ("skills", functions),
                    ("output_instructions", &instructions),
                ],
            )
            .map_err(|e| e.to_string())?;
        let user = self
            .prompts
            .render(
                "decide_user.txt",
                &[
                    ("memory", &memory),
                    ("observation", &request::observation_text(obs)),
                ],
            )
            .map_err(|e| e.to_string())?;
        Ok(vec![message("system", &system), message("user", &user)])
    }

    fn send(&mut self, purpose: &'static str, messages: &[Value]) -> Result<u64, String> {
        let schema = self
            .skills
            .as_ref()
            .map_or(Value::Null, |s| s.schema.clone());
        let body = request::body(
            &self.config.decision_model,
            messages,
            self.mode,
            &schema,
            self.config.stream,
            self.config.temperature,
        );
        self.worker.submit(purpose, body).map_err(|e| e.to_string())
    }

    fn in_cooldown(&mut self, time: f64) -> bool {
        match self.cooldown_until {
            Some(until) if time < until => true,
            Some(_) => {
                self.cooldown_until = None;
                self.failures = 0;
                self.notes.push(log(
                    "info",
                    "model cool-down over: asking the model again".into(),
                ));
                false
            }
            None => false,
        }
    }

    /// The model failed this decision: the rule brain's answer stands in.
    fn fall_back(&mut self, pending: Pending, why: &str) -> Thinking {
        self.failures += 1;
        self.notes.push(log(
            "warn",
            format!("model brain failed ({why}): the rule brain decides this one"),
        ));
        if self.failures >= self.config.cooldown_after.max(1) {
            let until = pending.time + self.config.cooldown_s;
            self.cooldown_until = Some(until);
            self.notes.push(log(
                "warn",
                format!(
                    "the model failed {} decisions in a row: it rests for {:.0} s (until t = {until:.1} s); the rule brain decides meanwhile",
                    self.failures, self.config.cooldown_s
                ),
            ));
        }
        Thinking::Done(Ok((pending.fallback, BrainKind::Fallback)))
    }

    /// The `llm_call` event of a call made for `purpose`, asked in the
    /// `structured` form (the decision's mode, or `tools` for an intent).
    fn account(&mut self, purpose: &str, structured: &str, result: &CallResult) {
        for r in &result.stats.retries {
            self.notes.push(log(
                "warn",
                format!(
                    "model call ({purpose}) got {}; retrying in {:.2} s",
                    r.cause,
                    r.delay.as_secs_f64()
                ),
            ));
        }
        let usage = result.reply.as_ref().ok().and_then(|c| c.usage);
        let (outcome, error) = match &result.reply {
            Ok(c) if cut_off(c) => (
                "truncated".to_string(),
                format!(
                    "the reply reached max_tokens ({}) before it was complete",
                    self.cap(purpose)
                ),
            ),
            Ok(_) => ("ok".to_string(), String::new()),
            Err(e) => (e.kind().to_string(), e.to_string()),
        };
        self.notes.push(EventKind::LlmCall(Box::new(LlmCallView {
            purpose: purpose.into(),
            model: self.config.decision_model.clone(),
            outcome,
            attempts: result.stats.attempts,
            latency_ms: result.stats.latency.as_millis() as u64,
            first_token_ms: result.stats.first_token.map(|d| d.as_millis() as u64),
            prompt_tokens: usage.map(|u| u.prompt_tokens),
            completion_tokens: usage.map(|u| u.completion_tokens),
            structured: structured.into(),
            error,
        })));
    }

    /// The reply cap of a call made for `purpose`.
    fn cap(&self, purpose: &str) -> u32 {
        crate::llm::Role::of_purpose(purpose).max_tokens(&self.config.max_tokens)
    }

    /// The pending call ended with `result`: a decision, a repair, a
    /// simpler retry, or the fallback.
    fn finished(&mut self, mut pending: Pending, result: &CallResult) -> Thinking {
        let completion = match &result.reply {
            Ok(c) => c,
            Err(e) => {
                if e.is_unsupported_feature()
                    && self.config.structured == Structured::Auto
                    && let Some(next) = request::step_down(self.mode)
                {
                    self.notes.push(log(
                        "info",
                        format!(
                            "the endpoint refused {} ({e}): asking with {} from now on",
                            self.mode.as_str(),
                            next.as_str()
                        ),
                    ));
                    self.mode = next;
                    return self.resend(pending);
                }
                let why = e.to_string();
                return self.fall_back(pending, &why);
            }
        };
        let verdict = match reply::decision_text(completion) {
            _ if cut_off(completion) => Err(format!(
                "your reply was cut off: it reached the limit of {} tokens before it was complete. Answer again, shorter: one short sentence of reason, only the ops needed",
                self.cap(pending.purpose)
            )),
            Err(problem) => Err(problem),
            Ok(text) => {
                let parsed = match self.skills.as_ref() {
                    Some(skills) => reply::parse_decision(&text, &skills.validators)
                        .map(|d| own_skill_names(d, &skills.model_names)),
                    None => Err("no skills are known".into()),
                };
                if parsed.is_err() {
                    pending.messages.push(message("assistant", &text));
                }
                parsed
            }
        };
        match verdict {
            Ok(decision) => {
                self.failures = 0;
                Thinking::Done(Ok((decision, BrainKind::Model)))
            }
            Err(problem) if !pending.repaired => {
                self.notes.push(log(
                    "warn",
                    format!("model reply rejected: {problem}; asking for one repair"),
                ));
                let instructions = self.output_instructions().unwrap_or_default();
                let repair = self
                    .prompts
                    .render(
                        "repair.txt",
                        &[("error", &problem), ("output_instructions", &instructions)],
                    )
                    .unwrap_or_else(|_| format!("Your reply was rejected: {problem}"));
                if pending
                    .messages
                    .last()
                    .and_then(|m| m.get("role"))
                    .and_then(Value::as_str)
                    != Some("assistant")
                {
                    pending
                        .messages
                        .push(message("assistant", "(no usable reply)"));
                }
                pending.messages.push(message("user", &repair));
                pending.repaired = true;
                pending.purpose = "repair";
                self.resend(pending)
            }
            Err(problem) => self.fall_back(
                pending,
                &format!("the repaired reply was still unusable: {problem}"),
            ),
        }
    }

    /// The probe of what the endpoint honours ended: the mode it found (a
    /// `log` event says which, and why), then the pending decision is asked.
    fn probed(&mut self, id: u64, probe: &crate::llm::probe::Probe) -> Thinking {
        let level = if probe.mode.is_some() { "info" } else { "warn" };
        self.notes.push(log(level, probe.summary()));
        if let Some(mode) = probe.mode {
            self.mode = mode;
        }
        match self.pending.take() {
            Some(mut pending) if pending.call == id => {
                let Some(obs) = pending.observation.take() else {
                    return self.fall_back(pending, "the probe lost its observation");
                };
                match self.first_messages(&obs) {
                    Ok(messages) => {
                        pending.messages = messages;
                        pending.purpose = "decide";
                        self.resend(pending)
                    }
                    Err(e) => self.fall_back(pending, &e),
                }
            }
            other => {
                self.pending = other;
                Thinking::Pending
            }
        }
    }

    fn resend(&mut self, mut pending: Pending) -> Thinking {
        match self.send(pending.purpose, &pending.messages) {
            Ok(call) => {
                pending.call = call;
                self.pending = Some(pending);
                Thinking::Pending
            }
            Err(e) => self.fall_back(pending, &e),
        }
    }

    fn next_update(&mut self) -> Option<Update> {
        if self.backlog.is_empty() {
            self.worker.try_recv()
        } else {
            Some(self.backlog.remove(0))
        }
    }

    /// Asks the model what `utterance` means, waiting for the answer
    /// (bounded by the call's deadline).
    fn ask_intent(&mut self, utterance: &str, world: &World, registry: &SkillRegistry) -> bool {
        let zones: Vec<&str> = world.zones.iter().map(|z| z.name.as_str()).collect();
        // The names the model is shown, kept with the skills (built once per
        // registry, not per utterance) to read its answer with.
        if self.refresh_skills(registry).is_err() {
            return false;
        }
        let Some(names) = self.skills.as_ref().map(|s| &s.model_names) else {
            return false;
        };
        let Ok(system) = self
            .prompts
            .render("intent_system.txt", &[("zones", &zones.join(", "))])
        else {
            return false;
        };
        let body = serde_json::json!({
            "model": self.config.decision_model,
            "messages": [message("system", &system), message("user", utterance)],
            "tools": request::skill_functions(registry, names),
            "tool_choice": "auto",
            "temperature": self.config.temperature,
            "stream": false,
        });
        match self.worker.submit("intent", body) {
            Ok(call) => {
                self.asked.push((call, utterance.to_string()));
                true
            }
            Err(_) => false,
        }
    }

    /// Keeps the reply of an intent call; `false` when `id` is not one.
    fn hear(&mut self, id: u64, purpose: &str, result: &crate::llm::CallResult) -> bool {
        let Some(i) = self.asked.iter().position(|(call, _)| *call == id) else {
            return false;
        };
        let (_, utterance) = self.asked.remove(i);
        // Asked with the skills as tools, whatever the decisions' mode.
        self.account(purpose, Structured::Tools.as_str(), result);
        self.heard.push((utterance, result.clone()));
        true
    }

    /// What the model made of an utterance.
    fn intent_from(
        &mut self,
        result: &crate::llm::CallResult,
        world: &World,
        registry: &SkillRegistry,
    ) -> Option<Intent> {
        let completion = result.reply.as_ref().ok()?;
        let calls = completion
            .choices
            .get(&0)
            .map(|c| c.tool_calls.clone())
            .unwrap_or_default();
        let names = self.skills.as_ref().map(|s| &s.model_names);
        match intent_of(&calls, world, registry, names) {
            Ok(intent) => intent,
            Err(why) => {
                self.notes
                    .push(log("warn", format!("model intent not usable: {why}")));
                None
            }
        }
    }
}

/// Whether the model stopped at its token cap rather than at its end.
fn cut_off(completion: &crate::llm::accumulate::Completion) -> bool {
    completion
        .choices
        .get(&0)
        .is_some_and(|c| c.finish_reason.as_deref() == Some("length"))
}

/// The decision with each dispatched skill under its own name again (the
/// model answered with the names it was shown).
fn own_skill_names(mut decision: Decision, names: &ModelNames) -> Decision {
    for op in &mut decision.ops {
        if let Op::Dispatch { skill, .. } = op
            && let Some(own) = names.skill(skill)
        {
            *skill = own.to_string();
        }
    }
    decision
}

/// Tool calls → an intent: navigate_to once (go) or several times (patrol),
/// dock (charge), stop_base (stop), each call's name read back through the
/// names the model was shown. Arguments are checked against the skill and
/// the world; anything else is not usable.
fn intent_of(
    calls: &[crate::llm::accumulate::ToolCall],
    world: &World,
    registry: &SkillRegistry,
    names: Option<&ModelNames>,
) -> Result<Option<Intent>, String> {
    let mut zones = Vec::new();
    for call in calls {
        let name = names
            .and_then(|n| n.skill(&call.name))
            .unwrap_or(&call.name);
        let args: Value = serde_json::from_str(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        })
        .map_err(|e| format!("`{}` arguments are not JSON ({e})", call.name))?;
        registry
            .check(name, &args, world)
            .map_err(|e| e.to_string())?;
        match name {
            "navigate_to" => {
                let zone = args
                    .get("zone")
                    .and_then(Value::as_str)
                    .ok_or("navigate_to without a zone")?;
                zones.push(zone.to_string());
            }
            "dock" => return Ok(Some(Intent::Charge)),
            "stop_base" => return Ok(Some(Intent::Stop)),
            other => return Err(format!("`{other}` is not something an utterance may start")),
        }
    }
    Ok(match zones.len() {
        0 => None,
        1 if zones[0] == world.charger_zone => Some(Intent::Charge),
        1 => Some(Intent::Goto {
            zone: zones.remove(0),
        }),
        _ => Some(Intent::Patrol { zones }),
    })
}

impl Brain for LlmBrain {
    fn kind(&self) -> BrainKind {
        BrainKind::Model
    }

    fn decide(&mut self, obs: &Observation, registry: &SkillRegistry) -> Thinking {
        let fallback = rule::decide(obs, registry);
        let mut pending = Pending {
            call: 0,
            purpose: "decide",
            messages: Vec::new(),
            fallback,
            time: obs.time,
            repaired: false,
            observation: None,
        };
        if self.in_cooldown(obs.time) {
            // Said once when the cool-down began; the decision event shows `fallback`.
            return Thinking::Done(Ok((pending.fallback, BrainKind::Fallback)));
        }
        if !self.probed {
            // `auto`: learn what the endpoint honours before the first decision.
            self.probed = true;
            if let Err(e) = self.refresh_skills(registry) {
                return self.fall_back(pending, &e);
            }
            return match self.worker.probe(&self.config.decision_model) {
                Ok(call) => {
                    pending.call = call;
                    pending.purpose = "probe";
                    pending.observation = Some(Box::new(obs.clone()));
                    self.pending = Some(pending);
                    Thinking::Pending
                }
                Err(e) => self.fall_back(pending, &e.to_string()),
            };
        }
        let prepared = self
            .refresh_skills(registry)
            .and_then(|()| self.first_messages(obs));
        match prepared {
            Ok(messages) => {
                pending.messages = messages;
                self.resend(pending)
            }
            Err(e) => self.fall_back(pending, &e),
        }
    }

    fn poll(&mut self, events: &mut Vec<EventKind>) -> Thinking {
        let mut answer = Thinking::Pending;
        while let Some(update) = self.next_update() {
            let current = self.pending.as_ref().map(|p| p.call);
            match update {
                Update::Token { id, purpose, text } if Some(id) == current => {
                    self.notes.push(EventKind::Token { purpose, text });
                }
                Update::Token { .. } => {}
                Update::Probed { id, probe } => {
                    answer = self.probed(id, &probe);
                    if matches!(answer, Thinking::Done(_)) {
                        break;
                    }
                }
                Update::Done {
                    id,
                    purpose,
                    result,
                } if self.hear(id, &purpose, &result) => {}
                Update::Done {
                    id,
                    purpose,
                    result,
                } => {
                    let mode = self.mode.as_str();
                    self.account(&purpose, mode, &result);
                    if Some(id) == current
                        && let Some(pending) = self.pending.take()
                    {
                        answer = self.finished(pending, &result);
                        if matches!(answer, Thinking::Done(_)) {
                            break;
                        }
                    }
                }
            }
        }
        events.append(&mut self.notes);
        if self.pending.is_none() && matches!(answer, Thinking::Pending) {
            return Thinking::Done(Err(BrainError::Unavailable(
                "no decision is pending".into(),
            )));
        }
        answer
    }

    fn recognize(&mut self, utterance: &str, world: &World, registry: &SkillRegistry) -> bool {
        if !self.config.recognize_intents || self.cooldown_until.is_some() {
            return false;
        }
        self.ask_intent(utterance, world, registry)
    }

    fn recognized(
        &mut self,
        world: &World,
        registry: &SkillRegistry,
    ) -> Vec<(String, Option<Intent>)> {
        if !self.is_recognizing() {
            // Called every tick: nothing to look for, leave the updates to `poll`.
            return Vec::new();
        }
        while let Some(update) = self.worker.try_recv() {
            self.backlog.push(update);
        }
        for update in std::mem::take(&mut self.backlog) {
            let kept = matches!(&update, Update::Done { id, purpose, result } if self.hear(*id, purpose, result));
            if !kept {
                self.backlog.push(update);
            }
        }
        std::mem::take(&mut self.heard)
            .into_iter()
            .map(|(utterance, result)| {
                let intent = self.intent_from(&result, world, registry);
                (utterance, intent)
            })
            .collect()
    }

    fn is_recognizing(&self) -> bool {
        !self.asked.is_empty() || !self.heard.is_empty()
    }

    fn take_events(&mut self, events: &mut Vec<EventKind>) {
        events.append(&mut self.notes);
    }

    fn use_memory(&mut self, memory: crate::memory::MemoryHandle) {
        self.memory = Some(memory);
    }

    fn waker(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.worker.waker())
    }

    fn wait(&mut self, timeout: Duration) {
        if self.backlog.is_empty()
            && let Some(update) = self.worker.recv_timeout(timeout)
        {
            self.backlog.push(update);
        }
    }
}
