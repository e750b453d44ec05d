//! The conversational fast path for the home (seeds 001 and 002, DESIGN §6):
//! utterance → session references → intent (rules, [`intent`]) → policy
//! gate per call (`crate::policy::home_reason`) → then
//!
//! - all calls control: three tracks — execute now, speak a filled reply
//!   template at once ([`templates`]), and a summary from forged success
//!   results ([`summary`]); a real failure afterwards is reported and
//!   corrects what was said;
//! - any call a query: a template first, then the real results, then the
//!   answer, with what the device cannot tell;
//! - a call that needs confirmation: the plan becomes a task whose step
//!   waits for the kernel's approval (approve / edit / reject).
//!
//! [`Home`] is the tool layer (seed 001 §3.2): every tool call is checked
//! against its schema, carries request / plan / step ids to the device
//! layer, and is written to the audit log. The engine and the home tools in
//! the skill registry share one `Home` ([`HomeHandle`]).

pub mod device_command;
pub mod heard;
pub mod intent;
pub mod pipeline;
pub mod semantic;
pub mod session;
pub mod summary;
pub mod templates;
pub mod tools;
pub mod verb;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::{Value, json};
use thiserror::Error;

use crate::config::HomeConfig;
use crate::devices::{DeviceError, DeviceWorld, Invocation, Scene, SimBackend};
use crate::lines::{self, Lang};
use crate::policy::{self, HomeGate};
use crate::protocol::SpeechTrack;
use crate::protocol::understanding::{PIPELINE, Reading, Trace, Understander};
use crate::source::SourceError;
use crate::store::audit::{self, AuditLog, AuditRow};

pub use intent::{Step, Understood, understand};
pub use pipeline::Verdict;
pub use session::Session;
pub use templates::Templates;

/// The home shared by the engine and the home tools.
pub type HomeHandle = Arc<Mutex<Home>>;

/// Locks the shared home (a panic elsewhere does not poison it for good:
/// the home's state is consistent after every call).
pub fn lock(home: &HomeHandle) -> MutexGuard<'_, Home> {
    home.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why the home could not be set up.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HomeError {
    /// The home file is malformed.
    #[error(transparent)]
    File(#[from] SourceError),
    /// The devices are inconsistent.
    #[error(transparent)]
    Devices(#[from] DeviceError),
    /// A tool's schema does not compile.
    #[error("tool `{tool}` has an invalid schema: {message}")]
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No such tool.
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    /// The arguments break the tool's schema.
    #[error("invalid args for `{tool}` at `{path}`: {message}")]
    InvalidArgs {
        /// The tool.
        tool: String,
        /// JSON pointer of the failing value.
        path: String,
        /// What was expected.
        message: String,
    },
    /// No such scene.
    #[error("no scene `{0}`")]
    UnknownScene(String),
    /// The device layer refused or failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The call was not made: its audit row could not be written first.
    #[error("not carried out: its audit row could not be written first: {0}")]
    Unrecorded(String),
}

impl ToolError {
    /// A stable code for results and the audit log.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownTool(_) => "unknown_tool",
            Self::InvalidArgs { .. } => "invalid_args",
            Self::UnknownScene(_) => "unknown_scene",
            Self::Device(e) => e.code(),
            Self::Unrecorded(_) => "unrecorded",
        }
    }
}

/// The ids a write carries (seed 001 §3.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    /// The plan.
    pub plan_id: String,
    /// The step in the plan.
    pub step_id: String,
    /// Unique per write.
    pub request_id: String,
}

/// One thing a turn produces, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A line to say on a track.
    Say(String, SpeechTrack),
    /// Devices changed: report them now.
    Devices,
}

/// What the engine does with an utterance about the home.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The intent's name (`home_control`, `home_query`, `home_mixed`, `scene`, `clarify`, `cannot`).
    pub intent: &'static str,
    /// What was understood.
    pub args: Value,
    /// The plan's id.
    pub plan_id: String,
    /// Lines and device reports, in order.
    pub out: Vec<Out>,
    /// A tool call that waits for confirmation: queue it as a task `(tool, args)`.
    pub confirm: Option<(String, Value)>,
    /// Forged success results of the control calls run at once (for a model summary).
    pub forged: Vec<Value>,
    /// Something for the robot's timers (the engine keeps them on its clock).
    pub timer: Option<heard::TimerAsk>,
    /// The language the turn was said in, and is answered in.
    pub lang: Lang,
    /// How the utterance went through the home's rows of the pipeline
    /// (empty when the engine ran the pipeline and keeps the trace).
    pub trace: Trace,
}

/// The home: its devices and scenes, the policy's rules, the session, the
/// reply templates, recent actions and the audit log.
pub struct Home {
    /// The devices.
    pub devices: DeviceWorld,
    /// The scenes.
    pub scenes: Vec<Scene>,
    /// The `[home]` rules.
    pub config: HomeConfig,
    /// What the conversation refers back to.
    pub session: Session,
    /// This session's reply templates.
    pub templates: Templates,
    /// Home Assistant's grammar compiled with this home's names (`None`: not
    /// loaded, or `[home] grammar = false`).
    pub hearing: Option<heard::Hearing>,
    /// Why the grammar is not (fully) in use, when it is not: said once.
    pub hearing_notice: Option<String>,
    /// The semantic fallback, when `[home] semantic` is on ([`Home::enable_semantic`]).
    pub semantic: Option<semantic::Semantic>,
    /// The room the listener (the robot) is in: `(id, name)`, for "the lights here".
    pub here: Option<(String, String)>,
    /// Where the request comes from when the caller knows better than the
    /// robot's position (an assist dataset's `context_device`): overrides `here`.
    pub context_area: Option<(String, String)>,
    validators: HashMap<String, jsonschema::Validator>,
    recent: VecDeque<Value>,
    audit: Option<AuditLog>,
    changed: Vec<(String, String)>,
    /// The run's id (the audit's trace id).
    pub trace_id: String,
    /// The conversation's id.
    pub session_id: String,
    /// Where the request the home is carrying out came from (the
    /// utterance's, or the task's that called a tool): audited with each call.
    pub origin: Option<crate::protocol::Origin>,
    plans: u64,
}

impl std::fmt::Debug for Home {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Home")
            .field("devices", &self.devices)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

const RECENT: usize = 50;

impl Home {
    /// The home for `world`: `[home] file`, else the built-in home of that
    /// name (`apartment`), else a home without devices.
    pub fn load(config: &HomeConfig, world: &str, trace_id: &str) -> Result<Self, HomeError> {
        let home = if let Some(path) = &config.file {
            crate::devices::load_home(path)?
        } else if world == "apartment" {
            crate::devices::builtin_home()?
        } else {
            crate::devices::Home {
                name: world.to_string(),
                floors: Vec::new(),
                rooms: Vec::new(),
                devices: Vec::new(),
                scenes: Vec::new(),
            }
        };
        let devices = match crate::devices::mqtt::backend_for(config, &home.devices)? {
            // Real devices: offline until the broker says otherwise.
            Some(mqtt) => {
                let offline = home
                    .devices
                    .into_iter()
                    .map(|d| crate::devices::Device { online: false, ..d });
                DeviceWorld::new(&home.name, home.rooms, offline.collect(), Box::new(mqtt))?
            }
            None => DeviceWorld::new(&home.name, home.rooms, home.devices, Box::new(SimBackend))?,
        }
        .with_floors(home.floors);
        Self::new(devices, home.scenes, config, trace_id)
    }

    /// A home over `devices` (any backend) with `scenes`.
    pub fn new(
        devices: DeviceWorld,
        scenes: Vec<Scene>,
        config: &HomeConfig,
        trace_id: &str,
    ) -> Result<Self, HomeError> {
        let specs = tools::specs();
        let mut validators = HashMap::new();
        for s in &specs {
            let v = jsonschema::validator_for(&s.args_schema).map_err(|e| HomeError::Schema {
                tool: s.name.clone(),
                message: e.to_string(),
            })?;
            validators.insert(s.name.clone(), v);
        }
        let templates = Templates::build(&specs, &devices, 7);
        let (hearing, hearing_notice) = if config.grammar {
            let dir = config
                .intents
                .clone()
                .unwrap_or_else(crate::intents::default_dir);
            let (grammars, notice) = heard::load_grammars(&dir);
            if grammars.is_empty() {
                (None, notice)
            } else {
                match heard::Hearing::new(&grammars, &devices, &scenes) {
                    Ok(h) => (Some(h), notice),
                    Err(e) => (
                        None,
                        Some(format!(
                            "Home Assistant's intents cannot be used with this home ({e}): robobrain's own rules only"
                        )),
                    ),
                }
            }
        } else {
            (None, None)
        };
        Ok(Self {
            devices,
            scenes,
            config: config.clone(),
            session: Session::default(),
            templates,
            hearing,
            hearing_notice,
            semantic: None,
            here: None,
            context_area: None,
            validators,
            recent: VecDeque::new(),
            audit: None,
            changed: Vec::new(),
            trace_id: trace_id.to_string(),
            session_id: format!("{trace_id}/s1"),
            origin: None,
            plans: 0,
        })
    }

    /// Writes every tool call to `audit` from now on.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Writes every tool call to `audit` from now on (replacing the log in use).
    pub fn set_audit(&mut self, audit: AuditLog) {
        self.audit = Some(audit);
    }

    /// The audit log, when there is one.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_ref()
    }

    /// What the policy needs to judge a device call now.
    pub fn gate(&self) -> HomeGate<'_> {
        HomeGate {
            config: &self.config,
            devices: &self.devices,
            scenes: &self.scenes,
            hour: policy::hour_now(&self.config),
        }
    }

    /// A new plan id (`p1`, `p2`, …).
    pub fn next_plan_id(&mut self) -> String {
        self.plans += 1;
        format!("p{}", self.plans)
    }

    /// Devices changed since the last call, with why: `(device id, reason)`.
    pub fn take_changed(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.changed)
    }

    /// Marks a device changed (a fault or a report), to be announced.
    pub fn mark_changed(&mut self, device: &str, reason: &str) {
        self.changed.push((device.to_string(), reason.to_string()));
    }

    /// Takes in what the backend heard from the devices.
    pub fn poll(&mut self) {
        for id in self.devices.poll() {
            self.mark_changed(&id, "reported");
        }
    }

    /// The audit row of a call of `tool` with `args`, saying `result`.
    fn audit_row(&self, ids: &Ids, tool: &str, args: &Value, result: &str, ok: bool) -> AuditRow {
        let mut summary = args.to_string();
        if summary.len() > 200 {
            let cut = (0..=200)
                .rev()
                .find(|i| summary.is_char_boundary(*i))
                .unwrap_or(0);
            summary.truncate(cut);
            summary.push('…');
        }
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        AuditRow {
            id: 0,
            at_ms,
            trace_id: self.trace_id.clone(),
            session_id: self.session_id.clone(),
            plan_id: ids.plan_id.clone(),
            step_id: ids.step_id.clone(),
            tool: tool.to_string(),
            args_summary: summary,
            result: result.to_string(),
            ok,
            latency_us: 0,
            origin: self
                .origin
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        }
    }

    /// Audits a call that did not go out (no device was asked).
    fn record(
        &self,
        ids: &Ids,
        tool: &str,
        args: &Value,
        result: &str,
        ok: bool,
        started: Instant,
    ) {
        let Some(audit) = &self.audit else { return };
        let mut row = self.audit_row(ids, tool, args, result, ok);
        row.latency_us = started.elapsed().as_micros() as i64;
        // An audit write that fails must not stop the home; the store's
        // own errors surface through the engine's durable path.
        let _ = audit.record(&row);
    }

    /// Audits a call the policy held for confirmation (it did not run).
    pub fn audit_held(&self, tool: &str, args: &Value, plan_id: &str, reason: &str) {
        let ids = Ids {
            plan_id: plan_id.to_string(),
            step_id: "-".into(),
            request_id: String::new(),
        };
        self.record(
            &ids,
            tool,
            args,
            &format!("confirmation_required: {reason}"),
            false,
            Instant::now(),
        );
    }

    /// Calls a tool: checks its arguments, carries it out and audits it.
    ///
    /// The audit row is written first, saying [`audit::STARTED`], and
    /// ended with the outcome once the call returns: a device is never
    /// asked without a record of the asking, and a brain stopped mid-call
    /// leaves a row its resume settles ([`Home::settle_unfinished`]). A row
    /// that cannot be written first refuses the call (`unrecorded`).
    pub fn call_tool(&mut self, tool: &str, args: &Value, ids: &Ids) -> Result<Value, ToolError> {
        let started = Instant::now();
        let row = match &self.audit {
            Some(audit) => Some(
                audit
                    .record(&self.audit_row(ids, tool, args, audit::STARTED, false))
                    .map_err(|e| ToolError::Unrecorded(e.to_string()))?,
            ),
            None => None,
        };
        let result = self.call_unaudited(tool, args, ids);
        let (text, ok) = match &result {
            Ok(v) => {
                let ok = v.get("ok").and_then(Value::as_bool).unwrap_or(true);
                let text = if ok {
                    "ok".to_string()
                } else {
                    format!("partial: {}", v.get("failed").cloned().unwrap_or_default())
                };
                (text, ok)
            }
            Err(e) => (format!("{}: {e}", e.code()), false),
        };
        if let (Some(audit), Some(id)) = (&self.audit, row) {
            // A failed ending leaves the row `started`: the resume settles it.
            let _ = audit.finish(id, &text, ok, started.elapsed().as_micros() as i64);
        }
        result
    }

    /// After a resume: the calls of this run whose audit row was started
    /// but never ended (the brain stopped between asking a device and
    /// hearing back). Each row is ended `interrupted`, with the state its
    /// device reports now — whether the call reached the device is read
    /// off the device, never assumed. Returns one line per row settled.
    pub fn settle_unfinished(&mut self) -> Vec<String> {
        // What the devices reported meanwhile (a real backend's state topics).
        self.poll();
        let Some(audit) = &self.audit else {
            return Vec::new();
        };
        let Ok(rows) = audit.unfinished(&self.trace_id) else {
            return Vec::new();
        };
        let mut settled = Vec::new();
        for row in rows {
            let device = serde_json::from_str::<Value>(&row.args_summary)
                .ok()
                .and_then(|a| a.get("device").and_then(Value::as_str).map(str::to_string));
            let now = device
                .as_deref()
                .and_then(|d| self.devices.get(d))
                .map(|d| {
                    format!(
                        "; `{}` now reports {}",
                        d.id,
                        Value::Object(d.state.clone())
                    )
                })
                .unwrap_or_default();
            let text = format!("interrupted: the brain stopped before the call ended{now}");
            if audit.finish(row.id, &text, false, row.latency_us).is_ok() {
                settled.push(format!("{} {}: {text}", row.tool, row.args_summary));
            }
        }
        settled
    }

    /// Checks a tool call's arguments and carries it out (unaudited: the
    /// caller audits it).
    fn call_unaudited(&mut self, tool: &str, args: &Value, ids: &Ids) -> Result<Value, ToolError> {
        self.validate(tool, args)?;
        if let Some(found) = self.look(tool, args)? {
            return Ok(found);
        }
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        Ok(match tool {
            "devices.invoke" => self.invoke_one(&call_of(args), ids, tool)?,
            "actions.batch_invoke" => {
                let calls: Vec<(String, String, Value)> = args
                    .get("calls")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(call_of).collect())
                    .unwrap_or_default();
                self.batch(&calls, ids, tool)
            }
            "scenes.run" => self.run_scene(s("scene").unwrap_or_default(), ids, tool)?,
            "actions.get_recent" => {
                let n = args.get("limit").and_then(Value::as_u64).unwrap_or(10) as usize;
                let skip = self.recent.len().saturating_sub(n);
                json!({"actions": self.recent.iter().skip(skip).collect::<Vec<_>>()})
            }
            "dialog.request_confirmation" | "dialog.ask_clarifying_question" => {
                json!({"status": "asked", "question": s("question")})
            }
            other => return Err(ToolError::UnknownTool(other.to_string())),
        })
    }

    /// Checks `args` against `tool`'s schema (an unknown tool fails here).
    fn validate(&self, tool: &str, args: &Value) -> Result<(), ToolError> {
        let validator = self
            .validators
            .get(tool)
            .ok_or_else(|| ToolError::UnknownTool(tool.to_string()))?;
        if let Err(e) = validator.validate(args) {
            return Err(ToolError::InvalidArgs {
                tool: tool.to_string(),
                path: e.instance_path().as_str().to_string(),
                message: e.to_string(),
            });
        }
        Ok(())
    }

    /// The read-only device tools (list, search, get, state, snapshot);
    /// `None` for any other tool.
    fn look(&self, tool: &str, args: &Value) -> Result<Option<Value>, ToolError> {
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        let device = |id: Option<&str>| {
            let id = id.unwrap_or_default();
            self.devices
                .get(id)
                .ok_or_else(|| ToolError::Device(DeviceError::UnknownDevice(id.to_string())))
        };
        Ok(Some(match tool {
            "devices.list" | "devices.search" => {
                let kind = s("kind").and_then(|k| serde_json::from_value(json!(k)).ok());
                let found = self.devices.search(s("query"), s("room"), kind);
                json!({"devices": found.iter().map(|d| json!({
                    "id": d.id, "name": d.name, "room": d.room, "kind": d.kind, "online": d.online
                })).collect::<Vec<_>>()})
            }
            "devices.get" => {
                let d = device(s("device"))?;
                json!({
                    "id": d.id, "name": d.name, "room": d.room, "kind": d.kind, "online": d.online,
                    "state": d.state,
                    "capabilities": d.capabilities.iter().map(|c| json!({"name": c.name, "args": c.args_schema})).collect::<Vec<_>>()
                })
            }
            "devices.get_state" => {
                let d = device(s("device"))?;
                json!({
                    "device": d.id, "online": d.online, "state": d.state,
                    "known": d.state.keys().collect::<Vec<_>>(),
                    "caveat": d.caveat
                })
            }
            "devices.snapshot" => {
                let list = match s("room") {
                    Some(r) => self.devices.in_room(r),
                    None => self.devices.devices().iter().collect(),
                };
                json!({"devices": list.iter().map(|d| json!({"device": d.id, "room": d.room, "online": d.online, "state": d.state})).collect::<Vec<_>>()})
            }
            _ => return Ok(None),
        }))
    }

    /// Runs the scene `name`'s calls as one batch.
    fn run_scene(&mut self, name: &str, ids: &Ids, tool: &str) -> Result<Value, ToolError> {
        let calls = self
            .scenes
            .iter()
            .find(|sc| sc.name == name)
            .map(|sc| sc.calls.clone())
            .ok_or_else(|| ToolError::UnknownScene(name.to_string()))?;
        let mut r = self.batch(&calls, ids, tool);
        r["scene"] = json!(name);
        Ok(r)
    }

    /// Several calls as one plan: each with its own step and request id;
    /// the result lists every call's outcome (a partial failure is not an error).
    fn batch(&mut self, calls: &[(String, String, Value)], ids: &Ids, tool: &str) -> Value {
        let mut results = Vec::new();
        let mut failed = 0;
        for (i, call) in calls.iter().enumerate() {
            let sub = Ids {
                plan_id: ids.plan_id.clone(),
                step_id: format!("{}.{}", ids.step_id, i + 1),
                request_id: format!("{}.{}", ids.request_id, i + 1),
            };
            let started = Instant::now();
            match self.invoke_one(call, &sub, tool) {
                Ok(r) => results.push(r),
                Err(e) => {
                    failed += 1;
                    self.record(
                        &sub,
                        "devices.invoke",
                        &json!({"device": call.0, "action": call.1, "args": call.2}),
                        &format!("{}: {e}", e.code()),
                        false,
                        started,
                    );
                    results.push(json!({
                        "device": call.0, "action": call.1, "args": call.2,
                        "status": "failed", "error": e.code(), "message": e.to_string()
                    }));
                }
            }
        }
        json!({"plan_id": ids.plan_id, "results": results, "ok": failed == 0, "failed": failed})
    }

    fn invoke_one(
        &mut self,
        call: &(String, String, Value),
        ids: &Ids,
        tool: &str,
    ) -> Result<Value, ToolError> {
        let (device, action, args) = call;
        let started = Instant::now();
        let applied = self.devices.invoke(&Invocation {
            request_id: ids.request_id.clone(),
            plan_id: ids.plan_id.clone(),
            step_id: ids.step_id.clone(),
            device: device.clone(),
            capability: action.clone(),
            args: args.clone(),
        })?;
        let result = json!({
            "device": device, "action": action, "args": args, "status": "ok",
            "state": applied.after, "latency_ms": applied.latency_ms,
            "request_id": ids.request_id, "plan_id": ids.plan_id, "step_id": ids.step_id
        });
        if tool != "devices.invoke" {
            self.record(
                ids,
                "devices.invoke",
                &json!({"device": device, "action": action, "args": args}),
                "ok",
                true,
                started,
            );
        }
        self.recent.push_back(result.clone());
        while self.recent.len() > RECENT {
            self.recent.pop_front();
        }
        self.changed
            .push((device.clone(), format!("{tool} {}", ids.request_id)));
        Ok(result)
    }

    /// The template line for a device call, in `lang`.
    fn template_for(&mut self, device: &str, action: &str, args: &Value, lang: Lang) -> String {
        let Some(d) = self.devices.get(device) else {
            return String::new();
        };
        let mut slots = args.as_object().cloned().unwrap_or_default();
        slots.insert(
            "device".into(),
            json!(lines::name_in(lang, &d.name, &d.aliases)),
        );
        let room = self.devices.room(&d.room).map_or_else(
            || d.room.replace('_', " "),
            |r| lines::name_in(lang, &r.name, &r.aliases),
        );
        slots.insert("room".into(), json!(room));
        let kind = d.kind.as_str();
        let slots = Value::Object(slots);
        // Only a template every slot of which has a value: never a line
        // with a hole in it. Without one, what the call will do, in words.
        let choices: Vec<String> = self
            .templates
            .for_call(kind, action, lang)
            .unwrap_or_default()
            .iter()
            .filter(|t| lines::holes(t, &slots).is_empty())
            .cloned()
            .collect();
        if choices.is_empty() {
            let what = summary::to_do(&self.devices, device, action, args, lang);
            return lines::line(lang, "template_call", &[("what", &what)]);
        }
        self.templates.pick(&choices, &slots)
    }

    fn query_template(&mut self, device: &str, lang: Lang) -> String {
        let name = summary::name_of(&self.devices, device, lang);
        let choices = self
            .templates
            .get("devices.get_state", lang)
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        self.templates.pick(&choices, &json!({"device": name}))
    }

    /// The tool call for control steps: `devices.invoke` for one, `actions.batch_invoke` for several.
    fn control_call(controls: &[(String, String, Value)], plan_id: &str) -> (String, Value) {
        if let [(device, action, args)] = controls {
            (
                "devices.invoke".into(),
                json!({"device": device, "action": action, "args": args, "plan_id": plan_id, "step_id": "1"}),
            )
        } else {
            let calls: Vec<Value> = controls
                .iter()
                .map(|(d, a, x)| json!({"device": d, "action": a, "args": x}))
                .collect();
            (
                "actions.batch_invoke".into(),
                json!({"calls": calls, "plan_id": plan_id, "step_id": "1"}),
            )
        }
    }

    fn describe_plan(&self, calls: &[(String, String, Value)], lang: Lang) -> String {
        let parts: Vec<String> = calls
            .iter()
            .map(|(d, a, x)| summary::to_do(&self.devices, d, a, x, lang))
            .collect();
        parts.join(&lines::line(lang, "plan_sep", &[]))
    }

    /// A plan that waits for confirmation: say so and hand it to the kernel
    /// (its guardrails hold it for approval and audit that).
    fn hold(
        &mut self,
        tool: String,
        args: Value,
        calls: &[(String, String, Value)],
        reason: &str,
        plan_id: &str,
        out: &mut Vec<Out>,
    ) -> (String, Value) {
        let lang = self.session.lang;
        let question = lines::line(
            lang,
            "confirm",
            &[
                ("reason", reason),
                ("plan", &self.describe_plan(calls, lang)),
            ],
        );
        let ids = Ids {
            plan_id: plan_id.to_string(),
            step_id: "0".into(),
            request_id: format!("{plan_id}.confirm"),
        };
        let _ = self.call_tool(
            "dialog.request_confirmation",
            &json!({"question": question, "plan": args}),
            &ids,
        );
        out.push(Out::Say(question, SpeechTrack::Answer));
        (tool, args)
    }

    /// What Home Assistant's grammar makes of `text` here, if it matches.
    fn hear(&self, text: &str) -> Option<(heard::Plan, Value)> {
        let hearing = self.hearing.as_ref()?;
        let here = self
            .context_area
            .as_ref()
            .or(self.here.as_ref())
            .map(|(id, name)| (id.as_str(), name.as_str()));
        let hour = policy::hour_now(&self.config);
        let Some(h) = hearing.hear(text, here) else {
            // Two targets joined by "and": each said on its own, the plans joined.
            let several = hearing.hear_several(text, here)?;
            let mut steps = Vec::new();
            let mut response = None;
            for h in &several {
                match heard::plan(h, hearing, &self.devices, &self.scenes, hour)? {
                    heard::Plan::Understood(Understood::Steps { steps: s }, r) => {
                        let new: Vec<Step> = s.into_iter().filter(|x| !steps.contains(x)).collect();
                        steps.extend(new);
                        response = response.or(r);
                    }
                    // Anything but device steps for one of them: say that one.
                    other => {
                        return Some((
                            other,
                            json!({"intent": h.recognized.intent, "language": h.language}),
                        ));
                    }
                }
            }
            let about = json!({
                "intent": several[0].recognized.intent,
                "language": several[0].language,
                "several": several.iter().map(|h| &h.recognized.template).collect::<Vec<_>>(),
            });
            return Some((
                heard::Plan::Understood(Understood::Steps { steps }, response),
                about,
            ));
        };
        let plan = heard::plan(&h, hearing, &self.devices, &self.scenes, hour)?;
        let r = &h.recognized;
        let slots: serde_json::Map<String, Value> = r
            .slots
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect();
        let about = json!({"intent": r.intent, "language": h.language, "slots": slots, "template": r.template});
        Some((plan, about))
    }

    /// Understands and carries out an utterance about the home; `None` when
    /// no row of the home's part of the pipeline understood it. The rows
    /// are asked in [`PIPELINE`]'s order; the turn's `trace` says who took
    /// it and why each earlier one passed.
    pub fn turn(&mut self, text: &str) -> Option<Turn> {
        let lang = Lang::of(text);
        self.session.lang = lang;
        let rows = PIPELINE.into_iter().filter(|u| u.is_home());
        let (grasp, trace) = pipeline::run(rows, |who| self.read(who, text));
        let mut turn = self.act(grasp?, lang);
        turn.trace = trace;
        Some(turn)
    }

    /// What the home's row `who` makes of `text` (any other row passes).
    /// Call it with `session.lang` set to the utterance's language (as
    /// [`Home::turn`] does).
    pub fn read(&self, who: Understander, text: &str) -> Verdict<Grasp> {
        match who {
            Understander::Answer => self.by_answer(text),
            Understander::HomeGrammar => self.by_grammar(text),
            Understander::HomeRules => self.by_rules(text),
            Understander::DeviceParser => by_device_parser(text, &self.devices),
            Understander::Semantic => self.by_semantic(text),
            other => Verdict::Passed(format!("{} is not the home's", other.as_str())),
        }
    }

    /// Carries out what a row of the pipeline took, in `lang`.
    pub fn act(&mut self, grasp: Grasp, lang: Lang) -> Turn {
        self.session.lang = lang;
        match grasp {
            Grasp::Answer(line, about) | Grasp::NotFound(line, about) => {
                self.answer_turn(line, &about)
            }
            Grasp::Timer(ask, about) => self.timer_turn(ask, &about),
            Grasp::Took(taken) => self.carry_out(taken, lang),
        }
    }

    /// The answer row: the rules, when the home just asked a question.
    fn by_answer(&self, text: &str) -> Verdict<Grasp> {
        if self.session.pending.is_none() {
            return Verdict::Passed("no question is waiting for an answer".into());
        }
        match understand(text, &self.devices, &self.scenes, &self.session) {
            Some(understood) => {
                let reading = pipeline::reading_of(&understood);
                Verdict::Took(
                    Grasp::rules(understood),
                    reading,
                    "an answer to the question just asked".into(),
                )
            }
            None => Verdict::Passed("not an answer to the question just asked".into()),
        }
    }

    /// The home rules' row: a plan is taken; a question back or "cannot"
    /// is held (the device parser may still know the device).
    fn by_rules(&self, text: &str) -> Verdict<Grasp> {
        if self.session.pending.is_some() {
            return Verdict::Passed("tried as an answer above".into());
        }
        let Some(understood) = understand(text, &self.devices, &self.scenes, &self.session) else {
            return Verdict::Passed("no home rule matches".into());
        };
        let reading = pipeline::reading_of(&understood);
        match &understood {
            Understood::Clarify { question, .. } => {
                let why = format!("would ask: {question}");
                Verdict::Held(Grasp::rules(understood), reading, why)
            }
            Understood::Cannot { message } => {
                let why = format!("would say: {message}");
                Verdict::Held(Grasp::rules(understood), reading, why)
            }
            Understood::Steps { .. } | Understood::Scene { .. } => Verdict::Took(
                Grasp::rules(understood),
                reading,
                "robobrain's home rules".into(),
            ),
        }
    }

    /// The grammar's row: what Home Assistant's grammar makes of `text`.
    /// Words it knows but finds nothing for here are held: a later row may
    /// know better, and otherwise the grammar's line stands.
    fn by_grammar(&self, text: &str) -> Verdict<Grasp> {
        if self.hearing.is_none() {
            let why = self
                .hearing_notice
                .clone()
                .unwrap_or_else(|| "Home Assistant's grammar is off (`[home] grammar`)".into());
            return Verdict::Passed(why);
        }
        let Some((plan, about)) = self.hear(text) else {
            return Verdict::Passed("no sentence of Home Assistant's grammar matches".into());
        };
        let reading = pipeline::reading_of_grammar(&about);
        let matched = about
            .get("template")
            .and_then(Value::as_str)
            .map_or_else(|| "matched".to_string(), |t| format!("matched \"{t}\""));
        match plan {
            heard::Plan::Answer(line) => {
                Verdict::Took(Grasp::Answer(line, about), reading, matched)
            }
            heard::Plan::Timer(ask) => Verdict::Took(Grasp::Timer(ask, about), reading, matched),
            heard::Plan::NotFound(line) => {
                let why = format!("{matched}, but: {line}");
                Verdict::Held(Grasp::NotFound(line, about), reading, why)
            }
            heard::Plan::Understood(understood, response) => Verdict::Took(
                Grasp::Took(Taken {
                    understood,
                    response,
                    about: Some(about),
                }),
                reading,
                matched,
            ),
        }
    }

    /// The semantic fallback's row ([`semantic`]): the nearest of the
    /// grammar's own sentences, read by the grammar as if it had been said.
    fn by_semantic(&self, text: &str) -> Verdict<Grasp> {
        let Some(semantic) = &self.semantic else {
            return Verdict::Passed("off (`[home] semantic = false`)".into());
        };
        if Lang::of(text) != Lang::En {
            return Verdict::Passed("the sentence model reads English only".into());
        }
        let index = match semantic.index() {
            Ok(index) => index,
            Err(why) => return Verdict::Passed(why),
        };
        let (exemplar, score, runner_up) = match index.nearest(text) {
            semantic::Nearest::Passed(why) => return Verdict::Passed(why),
            semantic::Nearest::Took {
                exemplar,
                score,
                runner_up,
            } => (exemplar, score, runner_up),
        };
        let Verdict::Took(grasp, mut reading, _) = self.by_grammar(&exemplar.text) else {
            return Verdict::Passed(format!(
                "the nearest template \"{}\" is no plan here",
                exemplar.text
            ));
        };
        if let Some(slots) = reading.slots.as_object_mut() {
            slots.insert(
                "semantic".into(),
                json!({"template": exemplar.text, "score": score, "runner_up": runner_up}),
            );
        }
        let risky = match &grasp {
            Grasp::Took(Taken {
                understood: Understood::Steps { steps },
                ..
            }) => steps.iter().filter_map(Step::call).any(|(d, a, _)| {
                policy::call_risk(&self.gate(), &d, &a).0 == crate::skills::Risk::HighWrite
            }),
            _ => false,
        };
        let note = if risky {
            "; high risk: it waits for confirmation, never runs at once"
        } else {
            ""
        };
        let why = format!(
            "nearest template \"{}\" ({score:.2}; the next other reading {runner_up:.2}){note}",
            exemplar.text
        );
        Verdict::Took(grasp, reading, why)
    }

    /// Turns the semantic fallback on: the model in `model_dir` and the
    /// English grammar's sentences with this home's names, indexed on their
    /// own thread (`now`: on this one, for tests and batch runs). Without
    /// the English grammar the row says so.
    pub fn enable_semantic(&mut self, model_dir: std::path::PathBuf, now: bool) {
        let dir = self
            .config
            .intents
            .clone()
            .unwrap_or_else(crate::intents::default_dir);
        let (grammars, _) = heard::load_grammars(&dir);
        let Some(english) = grammars.into_iter().find(|g| g.language == "en") else {
            self.semantic = Some(semantic::Semantic::failed(format!(
                "no English grammar in {}",
                dir.display()
            )));
            return;
        };
        self.semantic = Some(if now {
            semantic::Semantic::now(&model_dir, &english, &self.devices)
        } else {
            semantic::Semantic::start(model_dir, &english, &self.devices)
        });
    }

    /// A turn for the robot's timers: nothing said here, the engine answers.
    fn timer_turn(&mut self, ask: heard::TimerAsk, about: &Value) -> Turn {
        let mut turn = self.answer_turn(String::new(), about);
        turn.intent = "timer";
        turn.out.clear();
        turn.timer = Some(ask);
        turn
    }

    /// Carries out what a stage understood, under a new plan id.
    fn carry_out(&mut self, taken: Taken, lang: Lang) -> Turn {
        let Taken {
            understood,
            response,
            about,
        } = taken;
        let plan_id = self.next_plan_id();
        let mut args = serde_json::to_value(&understood).unwrap_or(Value::Null);
        if let (Some(about), Some(obj)) = (about, args.as_object_mut()) {
            obj.insert("grammar".into(), about);
        }
        let mut doing = Doing {
            plan_id,
            lang,
            response,
            out: Vec::new(),
            confirm: None,
            forged: Vec::new(),
        };
        let intent = match understood {
            Understood::Clarify {
                question,
                candidates,
                verb,
            } => self.clarify(&mut doing, question, candidates, verb),
            Understood::Cannot { message } => {
                doing.out.push(Out::Say(message, SpeechTrack::Answer));
                self.session.pending = None;
                "cannot"
            }
            Understood::Scene { name } => self.scene(&mut doing, &name),
            Understood::Steps { steps } => self.steps(&mut doing, &steps),
        };
        self.session.last_plan = Some(doing.plan_id.clone());
        Turn {
            intent,
            args,
            plan_id: doing.plan_id,
            out: doing.out,
            confirm: doing.confirm,
            forged: doing.forged,
            timer: None,
            lang,
            trace: Trace::default(),
        }
    }

    /// Asks which device was meant, and remembers what it was for.
    fn clarify(
        &mut self,
        doing: &mut Doing,
        question: String,
        candidates: Vec<String>,
        verb: Option<verb::Verb>,
    ) -> &'static str {
        let plan_id = &doing.plan_id;
        let ids = Ids {
            plan_id: plan_id.clone(),
            step_id: "0".into(),
            request_id: format!("{plan_id}.ask"),
        };
        let _ = self.call_tool(
            "dialog.ask_clarifying_question",
            &json!({"question": question, "candidates": candidates}),
            &ids,
        );
        doing.out.push(Out::Say(question, SpeechTrack::Answer));
        self.session.pending = Some(session::Pending { verb, candidates });
        "clarify"
    }

    /// Runs the scene `name` now, or holds it when the policy wants a
    /// confirmation.
    fn scene(&mut self, doing: &mut Doing, name: &str) -> &'static str {
        let calls = self
            .scenes
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.calls.clone())
            .unwrap_or_default();
        let tool_args = json!({"scene": name, "plan_id": doing.plan_id, "step_id": "1"});
        self.session.pending = None;
        self.session.last_devices = calls.iter().map(|c| c.0.clone()).collect();
        if let Some(reason) = policy::home_reason(&self.gate(), "scenes.run", &tool_args) {
            doing.confirm = Some(self.hold(
                "scenes.run".into(),
                tool_args,
                &calls,
                &reason,
                &doing.plan_id,
                &mut doing.out,
            ));
        } else {
            if let Some(line) = doing.response.take() {
                doing.out.push(Out::Say(line, SpeechTrack::Template));
            }
            self.say_templates(&calls, doing.lang, &mut doing.out);
            self.run_now("scenes.run", &tool_args, &doing.plan_id, &mut doing.out);
        }
        "scene"
    }

    /// Carries out device steps: the controls run now (or wait for a
    /// confirmation), the queries are answered; returns the intent's name.
    fn steps(&mut self, doing: &mut Doing, steps: &[Step]) -> &'static str {
        self.session.pending = None;
        let controls: Vec<(String, String, Value)> = steps.iter().filter_map(Step::call).collect();
        let queries: Vec<String> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Query { device } => Some(device.clone()),
                Step::Control { .. } => None,
            })
            .collect();
        self.note_touched(&controls, &queries);
        let tool_call = self.gate_controls(doing, &controls);
        // Track 2: the templates (Home Assistant's response when the
        // grammar understood it), before anything runs.
        if tool_call.is_some() {
            if let Some(line) = doing.response.take() {
                doing.out.push(Out::Say(line, SpeechTrack::Template));
            } else {
                self.say_templates(&controls, doing.lang, &mut doing.out);
            }
        }
        for q in &queries {
            let line = self.query_template(q, doing.lang);
            doing.out.push(Out::Say(line, SpeechTrack::Template));
        }
        if queries.is_empty() {
            if let Some((tool, targs)) = &tool_call {
                self.run_controls(doing, &controls, tool, targs);
            }
        } else {
            self.answer_queries(doing, &queries, tool_call.as_ref());
        }
        match (controls.is_empty(), queries.is_empty()) {
            (false, true) => "home_control",
            (true, false) => "home_query",
            _ => "home_mixed",
        }
    }

    /// Remembers the devices a plan touches, and the first one's room, for
    /// what the conversation refers back to.
    fn note_touched(&mut self, controls: &[(String, String, Value)], queries: &[String]) {
        let mut touched: Vec<String> = controls
            .iter()
            .map(|c| c.0.clone())
            .chain(queries.iter().cloned())
            .collect();
        touched.dedup();
        self.session.last_room = touched
            .first()
            .and_then(|d| self.devices.get(d))
            .map(|d| d.room.clone());
        self.session.last_devices = touched;
    }

    /// The control steps' tool call when the policy lets it run now; when it
    /// wants a confirmation, the call is held (`doing.confirm`) and `None`.
    fn gate_controls(
        &mut self,
        doing: &mut Doing,
        controls: &[(String, String, Value)],
    ) -> Option<(String, Value)> {
        if controls.is_empty() {
            return None;
        }
        let (tool, targs) = Self::control_call(controls, &doing.plan_id);
        if let Some(reason) = policy::home_reason(&self.gate(), &tool, &targs) {
            doing.confirm = Some(self.hold(
                tool,
                targs,
                controls,
                &reason,
                &doing.plan_id,
                &mut doing.out,
            ));
            None
        } else {
            Some((tool, targs))
        }
    }

    /// Track 2 for device calls: each call's template line, in `lang`.
    fn say_templates(&mut self, calls: &[(String, String, Value)], lang: Lang, out: &mut Vec<Out>) {
        for (d, a, x) in calls {
            let line = self.template_for(d, a, x, lang);
            out.push(Out::Say(line, SpeechTrack::Template));
        }
    }

    /// Controls only: track 3 from forged success; track 1 runs; a real
    /// failure corrects.
    fn run_controls(
        &mut self,
        doing: &mut Doing,
        controls: &[(String, String, Value)],
        tool: &str,
        targs: &Value,
    ) {
        let lang = doing.lang;
        let steps_run: Vec<Step> = controls
            .iter()
            .map(|(d, a, x)| Step::Control {
                device: d.clone(),
                action: a.clone(),
                args: x.clone(),
            })
            .collect();
        doing.forged = summary::forge(&steps_run);
        let result = self.run(tool, targs, &doing.plan_id);
        doing.out.push(Out::Devices);
        doing.out.push(Out::Say(
            summary::rule_summary(&self.devices, &doing.forged, lang),
            SpeechTrack::Summary,
        ));
        for f in failures(&result) {
            let failed = summary::failure(&self.devices, &f, lang);
            let line = lines::line(lang, "correction", &[("line", &failed)]);
            doing.out.push(Out::Say(line, SpeechTrack::Answer));
        }
    }

    /// Query branch: real results first (of the controls `tool_call` runs
    /// now, if any), then the answer.
    fn answer_queries(
        &mut self,
        doing: &mut Doing,
        queries: &[String],
        tool_call: Option<&(String, Value)>,
    ) {
        let (lang, plan_id) = (doing.lang, &doing.plan_id);
        let mut answer = Vec::new();
        if let Some((tool, targs)) = tool_call {
            let result = self.run(tool, targs, plan_id);
            doing.out.push(Out::Devices);
            answer.push(summary::outcome_line(self, &result, lang));
        }
        for (i, q) in queries.iter().enumerate() {
            let ids = Ids {
                plan_id: plan_id.clone(),
                step_id: format!("q{}", i + 1),
                request_id: format!("{plan_id}.q{}", i + 1),
            };
            if self
                .call_tool("devices.get_state", &json!({"device": q}), &ids)
                .is_ok()
                && let Some(d) = self.devices.get(q)
            {
                answer.push(summary::describe(d, lang));
            }
        }
        let sep = lines::line(lang, "sentence_sep", &[]);
        doing
            .out
            .push(Out::Say(answer.join(&sep), SpeechTrack::Answer));
    }

    /// A turn that only answers (the time, "never mind", what cannot be done).
    fn answer_turn(&mut self, line: String, about: &Value) -> Turn {
        let plan_id = self.next_plan_id();
        self.session.pending = None;
        self.session.last_plan = Some(plan_id.clone());
        Turn {
            intent: "answer",
            args: json!({"kind": "answer", "text": line, "grammar": about}),
            plan_id,
            out: vec![Out::Say(line, SpeechTrack::Answer)],
            confirm: None,
            forged: Vec::new(),
            timer: None,
            lang: self.session.lang,
            trace: Trace::default(),
        }
    }

    /// Runs a write tool now under a fresh request id; its failure becomes a result.
    fn run(&mut self, tool: &str, args: &Value, plan_id: &str) -> Value {
        let ids = Ids {
            plan_id: plan_id.to_string(),
            step_id: "1".into(),
            request_id: format!("{}/{plan_id}.1", self.trace_id),
        };
        match self.call_tool(tool, args, &ids) {
            Ok(v) => v,
            Err(e) => json!({
                "device": args.get("device"), "action": args.get("action"), "args": args.get("args"),
                "status": "failed", "error": e.code(), "message": e.to_string()
            }),
        }
    }

    fn run_now(&mut self, tool: &str, args: &Value, plan_id: &str, out: &mut Vec<Out>) {
        let result = self.run(tool, args, plan_id);
        out.push(Out::Devices);
        let lang = self.session.lang;
        out.push(Out::Say(
            summary::outcome_line(self, &result, lang),
            SpeechTrack::Summary,
        ));
    }
}

/// What a home row of the pipeline made of an utterance it took (or
/// held): carried out by [`Home::act`].
#[derive(Debug)]
pub enum Grasp {
    /// Nothing to run: just say this (with what the grammar matched).
    Answer(String, Value),
    /// Something for the robot's timers (with what the grammar matched).
    Timer(heard::TimerAsk, Value),
    /// The grammar knew the words but found nothing here: what to say if
    /// no later stage understands it either.
    NotFound(String, Value),
    /// Understood: a plan to carry out.
    Took(Taken),
}

impl Grasp {
    /// What the rules understood (no grammar response, nothing matched).
    fn rules(understood: Understood) -> Self {
        Self::Took(Taken {
            understood,
            response: None,
            about: None,
        })
    }
}

/// What a row understood, ready to be carried out.
#[derive(Debug)]
pub struct Taken {
    /// What was understood.
    understood: Understood,
    /// Home Assistant's response line for it, when the grammar has one.
    response: Option<String>,
    /// What the grammar matched, when it was the grammar.
    about: Option<Value>,
}

/// One turn's plan as it is carried out: what it is and what it produced.
struct Doing {
    /// The plan's id.
    plan_id: String,
    /// The language it is answered in.
    lang: Lang,
    /// Home Assistant's response line, until it is said.
    response: Option<String>,
    /// Lines and device reports, in order.
    out: Vec<Out>,
    /// A tool call held for confirmation.
    confirm: Option<(String, Value)>,
    /// Forged success results of the control calls run at once.
    forged: Vec<Value>,
}

/// A device call `(device, action, args)` read off a tool's arguments
/// (missing parts empty; missing args `{}`).
fn call_of(v: &Value) -> (String, String, Value) {
    (
        v.get("device")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        v.get("action")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        v.get("args").cloned().unwrap_or_else(|| json!({})),
    )
}

/// The failed calls in a write's result.
fn failures(result: &Value) -> Vec<Value> {
    match result.get("results").and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .filter(|r| r.get("status").and_then(Value::as_str) != Some("ok"))
            .cloned()
            .collect(),
        None if result.get("status").and_then(Value::as_str) != Some("ok") => vec![result.clone()],
        None => Vec::new(),
    }
}

/// The device parser's row: `sentence` read as one call of one device.
fn by_device_parser(sentence: &str, world: &DeviceWorld) -> Verdict<Grasp> {
    use device_command::{Command, parse_command};
    match parse_command(sentence, world) {
        Command::Call {
            device,
            capability,
            args,
        } => {
            let reading = Reading::new(
                "device_call",
                json!({"device": device, "capability": capability, "args": args}),
            );
            let understood = Understood::Steps {
                steps: vec![Step::Control {
                    device,
                    action: capability,
                    args,
                }],
            };
            Verdict::Took(
                Grasp::rules(understood),
                reading,
                "one device, one capability".into(),
            )
        }
        Command::Ambiguous { candidates, .. } => {
            Verdict::Passed(format!("several devices fit: {}", candidates.join(", ")))
        }
        Command::NoDevice { wanted } => Verdict::Passed(format!(
            "a verb ({}) but no device that can do it",
            wanted.join(" or ")
        )),
        Command::NotUnderstood => Verdict::Passed("not a device command it knows".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apartment() -> Home {
        let config = HomeConfig {
            hour: Some(12.0),
            ..HomeConfig::default()
        };
        Home::load(&config, "apartment", "t").unwrap()
    }

    /// Seed 001's tiers through a whole turn: every light of a room at
    /// once is low risk and runs; a lock asks first.
    #[test]
    fn an_area_command_on_several_lights_runs_and_a_lock_asks() {
        let mut home = apartment();
        for text in [
            "turn on the lights in the living room",
            "turn off the lights in the living room",
        ] {
            let turn = home.turn(text).unwrap();
            assert_eq!(turn.confirm, None, "{text}: {:?}", turn.out);
            assert!(turn.forged.len() > 1, "{text}: {:?}", turn.forged);
        }
        for text in ["lock the front door", "把门锁上"] {
            let turn = home.turn(text).unwrap();
            let (tool, args) = turn
                .confirm
                .unwrap_or_else(|| panic!("{text}: ran at once"));
            assert_eq!(tool, "devices.invoke", "{text}");
            assert_eq!(args["device"], "front_door_lock", "{text}");
        }
    }

    /// `Home::turn` runs the home's rows of the pipeline and says so.
    #[test]
    fn a_turn_carries_the_home_rows_trace() {
        let mut home = apartment();
        let turn = home.turn("turn on the kitchen light").unwrap();
        assert_eq!(
            turn.trace.by,
            Some(Understander::HomeGrammar),
            "{}",
            turn.trace.text()
        );
        let asked: Vec<Understander> = turn.trace.rows.iter().map(|r| r.understander).collect();
        assert_eq!(asked, [Understander::Answer, Understander::HomeGrammar]);
        assert!(home.turn("my socks are feeling rather low today").is_none());
    }
}
