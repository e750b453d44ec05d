//! One synchronous tick of the brain: the kernel's K1–K6, then the ReAct
//! loop's R1–R8, with the robot link advanced by the tick's duration.
//!
//! The engine is deterministic for a seed: the scenario runner drives it in
//! lockstep, and the async [`crate::runtime`] drives it on a clock. Its
//! state that matters for a resume lives in [`KernelState`] (serde), apart
//! from the things it talks to (link, brain, registry).
//!
//! - `commands.rs`: K1, turning commands and utterances into tasks and interrupts.
//! - `kernel_step.rs`: K2–K5, telemetry, results, activity, mode arbitration, preemption.
//! - `iterate.rs`: K6 and R1–R8, the driver of [`crate::react::step`] (it
//!   observes, asks the brain, judges, dispatches) and the approval interrupt.
//! - `patrol.rs`: repeated patrol rounds on a fixed schedule (`PATROL_INTERVAL`).
//! - `timers.rs`: the timers the operator sets ("set a timer for 5 minutes",
//!   "定时10分钟"), kept on the sim clock and announced when they end.
//! - `durable.rs`: the per-tick commit, the side-effect ledger, resume and
//!   reconciliation with the robot (only with a [`crate::store::Store`] attached).
//! - [`assist`]: the assist dataset runner's assistant through the whole
//!   engine (`robobrain assist`): a tool over the engine, not part of a tick.
//! - `rest.rs`: the E-stop and bringing the robot to rest when the brain
//!   stops thinking (store failure, shutdown, panic) — sent before any commit.

pub mod assist;
mod checkpoint;
mod commands;
mod durable;
mod home;
mod iterate;
mod kernel_step;
mod patrol;
mod rest;
mod timers;
#[cfg(test)]
mod understanding;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::brain::{Brain, RuleBrain};
use crate::config::Config;
use crate::kernel::TaskQueue;
use crate::link::{LinkReply, LinkRequest, Outbox, RobotLink, Telemetry};
use crate::protocol::{
    Activity, ApprovalView, BrainKind, Command, DecisionView, Event, EventKind, Mode, Node, Op,
    Origin, RobotView, Snapshot, SpeechTrack,
};
use crate::skills::{SkillContext, SkillError, SkillRegistry, SkillRunner};
use crate::world::World;

/// Why an engine could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The configuration or world is inconsistent.
    #[error("{0}")]
    Setup(String),
    /// A skill could not be registered.
    #[error(transparent)]
    Skill(#[from] SkillError),
}

/// An op waiting for an operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// `a1`, `a2`, …
    pub id: String,
    /// Task it belongs to.
    pub task_id: String,
    /// The op.
    pub op: Op,
    /// Why approval is needed.
    pub reason: String,
    /// The skill's risk level.
    pub risk: String,
    /// Who asked for the task (the approval card shows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<Origin>,
}

/// The engine's state: everything a checkpoint needs to resume.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelState {
    /// Sim seconds since start.
    pub time: f64,
    /// Monotonic step number (one per state-changing node).
    pub step: u64,
    /// Last event sequence number.
    pub seq: u64,
    /// Kernel mode.
    pub mode: Mode,
    /// Why the mode is what it is.
    pub mode_reason: String,
    /// Activity.
    pub activity: Activity,
    /// E-stop latched.
    pub estop: bool,
    /// Tasks.
    pub queue: TaskQueue,
    /// A higher-priority user task waiting for the ReAct loop to switch.
    pub preempt_for: Option<String>,
    /// Approvals waiting for the operator.
    pub approvals: Vec<PendingApproval>,
    /// Latest robot state.
    pub telemetry: Telemetry,
    /// The last decision.
    pub last_decision: Option<DecisionView>,
    /// The last failure, in words.
    pub last_failure: Option<String>,
    /// Approvals created so far.
    pub approvals_created: u64,
    /// E-stops pressed so far.
    pub estops: u64,
    /// Sim time of the last telemetry event.
    pub last_telemetry_at: Option<f64>,
    /// Data skills share (seed 000 §6.2): `last_vision_result`, `emergency_level`, …
    #[serde(default)]
    pub shared: std::collections::BTreeMap<String, serde_json::Value>,
    /// Alerts raised, oldest first (acknowledged ones are kept until forgotten).
    #[serde(default)]
    pub incidents: Vec<crate::protocol::IncidentRecord>,
    /// Alerts raised so far (incident ids count from it).
    #[serde(default)]
    pub alerts_raised: u64,
    /// Repeated patrol rounds, while `[patrol] interval_s` is set and the
    /// operator has not stopped them.
    #[serde(default)]
    pub rounds: Option<patrol::Rounds>,
    /// The timers the operator set, running or paused.
    #[serde(default)]
    pub timers: Vec<timers::Timer>,
    /// Timers set so far (timer ids count from it).
    #[serde(default)]
    pub timers_made: u64,
}

/// The brain, its robot link and its state, advanced one tick at a time.
///
/// Its state is grouped by what it is for, each part owned by the engine
/// and named where a method uses it: what the run is ([`Setup`]), what a
/// checkpoint keeps ([`KernelState`]), the robot's side ([`RobotIo`]), the
/// deciding side ([`Mind`]), commands in and events and speech out
/// ([`Traffic`]), the store (when recording) and the smart home
/// ([`HomeParts`]).
pub struct Engine {
    setup: Setup,
    state: KernelState,
    robot: RobotIo,
    mind: Mind,
    traffic: Traffic,
    durable: Option<durable::Durable>,
    home: HomeParts,
}

/// What the run is: fixed when the engine is made (the run's description
/// is filled in once by the session builder).
struct Setup {
    config: Config,
    world: World,
    /// The world's grid with every passage open, built once: the policy
    /// plans each motion it judges on it (building it costs more than the
    /// plan).
    grid: crate::world::grid::Grid,
    thread_id: String,
    /// Unique to this engine (its start time, µs): stop goal ids carry it.
    nonce: u64,
    /// What the run is made of, as the session builder assembled it.
    run: Option<crate::protocol::RunInfo>,
}

/// The robot's side: the link, what waits to go to it, what came back.
struct RobotIo {
    link: Box<dyn RobotLink>,
    /// Requests a tick wants sent, held until the tick is on record.
    held: Outbox,
    replies: Vec<LinkReply>,
    /// Goals asked about after a resume or a reconnect, with the request
    /// to send if the robot never heard of them.
    reconciling: BTreeMap<String, Option<LinkRequest>>,
    /// Times the robot was brought to rest (stop goal ids count from it).
    rests: u64,
    /// Whether [`Engine::close`] ran (a dropped engine that ran but did
    /// not close still stops the robot).
    closed: bool,
    /// Whether a tick ran: an engine dropped before its first (a run that
    /// could not start) has sent nothing and stops nothing.
    ticked: bool,
}

/// The deciding side: the brain, the skills it may use, what it remembers.
struct Mind {
    brain: Box<dyn Brain>,
    registry: SkillRegistry,
    runner: SkillRunner,
    /// Utterances a model is recognising, with where each came from: what
    /// it understood later is carried out as from there.
    /// And how far the pipeline got with each (the `understanding` event
    /// goes out when the model has answered).
    recognizing: Vec<(String, Option<Origin>, crate::protocol::Trace)>,
    /// The run's memory (what was said), when attached.
    memory: Option<crate::memory::MemoryHandle>,
}

/// Commands in; events and speech out.
struct Traffic {
    pending: Vec<(Command, Origin)>,
    /// Where the command being taken in came from: every event emitted
    /// meanwhile carries it.
    cause: Option<Origin>,
    outbox: Vec<Event>,
    /// Events on record (or with no store), ready for the face.
    ready: Vec<Event>,
    /// Voices what the robot says.
    speaker: crate::voice::Speaker,
}

/// The smart home, shared with the home tools in the registry, and the
/// model that writes its turn summaries.
struct HomeParts {
    handle: crate::hci::HomeHandle,
    /// With `[home] summary = "model"`: the model that writes turn summaries,
    /// and the turns waiting for one (request id → forged results).
    summarizer: Option<home::Summarizer>,
}

impl Engine {
    /// An engine over an existing robot link, with the rule brain and the built-in skills.
    pub fn new(
        config: &Config,
        world: World,
        link: Box<dyn RobotLink>,
    ) -> Result<Self, EngineError> {
        let thread_id = config.thread_id.clone().unwrap_or_else(new_thread_id);
        let audio_dir = config
            .runs_dir
            .join("audio")
            .join(thread_id.replace(['/', '\\'], "_"));
        let mut home = crate::hci::Home::load(&config.home, &world.name, &thread_id)
            .map_err(|e| EngineError::Setup(format!("home: {e}")))?;
        if config.home.semantic {
            home.enable_semantic(config.memory.model_path(), false);
        }
        let home = match crate::store::audit::AuditLog::in_memory() {
            Ok(audit) => home.with_audit(audit),
            Err(_) => home,
        };
        let home = std::sync::Arc::new(std::sync::Mutex::new(home));
        let mut registry = builtin_registry(config, &thread_id)?;
        for tool in crate::hci::tools::skills(&home) {
            registry.register(tool, &serde_json::Value::Null)?;
        }
        let mut engine = Self {
            setup: Setup {
                config: config.clone(),
                grid: crate::world::grid::Grid::new(&world),
                world,
                thread_id,
                nonce: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64),
                run: None,
            },
            state: KernelState {
                mode_reason: "starting".into(),
                ..KernelState::default()
            },
            robot: RobotIo {
                link,
                held: Outbox::default(),
                replies: Vec::new(),
                reconciling: BTreeMap::new(),
                rests: 0,
                closed: false,
                ticked: false,
            },
            mind: Mind {
                brain: Box::new(RuleBrain::new()),
                registry,
                runner: SkillRunner::new(),
                recognizing: Vec::new(),
                memory: None,
            },
            traffic: Traffic {
                pending: Vec::new(),
                cause: None,
                outbox: Vec::new(),
                ready: Vec::new(),
                speaker: {
                    let mut speaker = crate::voice::Speaker::new(config.speech.voice, &audio_dir);
                    if config.speech.voice == crate::voice::VoiceChoice::Model {
                        speaker = speaker.speaking_with(&config.llm, &config.speech.model_voice);
                    }
                    if config.speech.play {
                        speaker.playing()
                    } else {
                        speaker
                    }
                },
            },
            durable: None,
            home: HomeParts {
                handle: home,
                summarizer: home::Summarizer::for_config(config),
            },
        };

        engine.state.telemetry.battery_pct = engine.setup.world.battery.initial_pct;
        if let Some(why) = engine.traffic.speaker.notice().map(str::to_string) {
            engine.log("warn", &why);
        }
        let heard = crate::hci::lock(&engine.home.handle).hearing_notice.clone();
        if let Some(why) = heard {
            engine.log("warn", &why);
        }
        engine.state.telemetry.pose = engine.setup.world.start_pose;
        let snapshot = engine.snapshot();
        engine.emit(EventKind::Snapshot {
            snapshot: Box::new(snapshot),
        });
        Ok(engine)
    }

    /// An engine over the in-process simulator of `world`.
    pub fn simulated(config: &Config, world: World) -> Result<Self, EngineError> {
        let link = Box::new(crate::sim::SimLink::new(world.clone(), config.seed));
        Self::new(config, world, link)
    }

    /// Replaces the brain (the rule brain is the default).
    pub fn set_brain(&mut self, brain: Box<dyn Brain>) {
        self.mind.brain = brain;
        if let Some(memory) = &self.mind.memory {
            self.mind.brain.use_memory(memory.clone());
        }
    }

    /// Attaches the run's memory: the operator's utterances and the robot's
    /// speech become messages (handed to the memory thread, never waited
    /// for) and the brain may use the memory's context.
    pub fn set_memory(&mut self, memory: crate::memory::MemoryHandle) {
        self.mind.brain.use_memory(memory.clone());
        self.mind.memory = Some(memory);
    }

    /// Records what the run is made of (the session builder's account of
    /// it) and says so in a `run` event; every snapshot carries it from now on.
    pub fn set_run_info(&mut self, run: crate::protocol::RunInfo) {
        self.setup.run = Some(run.clone());
        self.emit(EventKind::Run { run });
    }

    /// Adds a `log` event (for drivers: which brain runs and why, say).
    pub fn log(&mut self, level: &str, message: &str) {
        self.emit(EventKind::Log {
            level: level.to_string(),
            message: message.to_string(),
        });
    }

    /// The skill registry, read-only: what the run's skills are and how
    /// each is doing. A face adds its own skill through
    /// [`crate::session::Run::register_skill`] before the run starts.
    pub fn registry(&self) -> &SkillRegistry {
        &self.mind.registry
    }

    /// The skill registry, for the run's assembly inside the core (the
    /// session builder, MCP services) to register more skills.
    pub(crate) fn registry_mut(&mut self) -> &mut SkillRegistry {
        &mut self.mind.registry
    }

    /// The robot link's E-stop line, if it has one
    /// ([`crate::link::RobotLink::estop_line`]): the runtime gives it to
    /// the faces' command senders.
    pub fn estop_line(&self) -> Option<std::sync::Arc<dyn crate::link::EStopLine>> {
        self.robot.link.estop_line()
    }

    /// Queues a command from `origin`; it is ingested at the start of the
    /// next tick (K1). An E-stop does not wait for the tick: the base is
    /// stopped before this returns.
    pub fn submit(&mut self, command: Command, origin: Origin) {
        if command == Command::EStop && origin.may_act() {
            self.traffic.cause = Some(origin);
            self.estop_now();
            self.traffic.cause = None;
            self.commit_and_flush(false);
        } else {
            self.traffic.pending.push((command, origin));
        }
    }

    /// Runs one tick and appends what happened to `out`.
    ///
    /// With a store attached, the tick's events, checkpoint and ledger rows
    /// are committed before anything it sends leaves for the robot; a halted
    /// engine (see [`Engine::halted`]) does nothing.
    pub fn tick(&mut self, out: &mut Vec<Event>) {
        self.robot.ticked = true;
        if self.halted().is_some() {
            out.append(&mut self.traffic.ready);
            out.append(&mut self.traffic.outbox);
            return;
        }
        for (command, origin) in std::mem::take(&mut self.traffic.pending) {
            self.ingest(command, origin);
        }
        self.heard();
        self.robot.link.advance(self.setup.config.tick_s);
        self.state.time += self.setup.config.tick_s;
        self.sync_robot();
        self.update_world();
        self.next_round();
        self.ring_timers();
        self.arbitrate();
        self.route();
        self.brain_notes();
        self.report_devices();
        self.summaries();
        self.deliver(out);
    }

    /// The smart home the engine and its home tools share.
    pub fn home(&self) -> &crate::hci::HomeHandle {
        &self.home.handle
    }

    /// Commits what this tick or pump did (with a store) and hands its
    /// events to `out`; requests to the robot leave only after the commit.
    fn deliver(&mut self, out: &mut Vec<Event>) {
        self.commit_and_flush(false);
        out.append(&mut self.traffic.ready);
        out.append(&mut self.traffic.outbox);
    }

    /// Takes in what a thinking brain has to say (streamed tokens, the
    /// decision and what follows from it) without advancing time, and
    /// appends the events to `out`. Drivers call it between ticks when the
    /// brain's [`Engine::brain_waker`] fires, or in lockstep while
    /// [`Engine::is_thinking`].
    pub fn pump(&mut self, out: &mut Vec<Event>) {
        if self.halted().is_none()
            && let Some(id) = self.deciding_task()
        {
            self.poll_brain(&id);
        }
        if self.halted().is_none() {
            self.heard();
            self.skill_results();
            self.summaries();
        }
        self.brain_notes();
        self.deliver(out);
    }

    /// Whether the active task waits for its brain's decision, an utterance
    /// for the brain's understanding, or a skill for a model's answer.
    pub fn is_thinking(&self) -> bool {
        self.deciding_task().is_some()
            || self.mind.brain.is_recognizing()
            || self.mind.registry.is_waiting()
            || self
                .home
                .summarizer
                .as_ref()
                .is_some_and(home::Summarizer::is_waiting)
    }

    /// Blocks until the brain has news or `timeout` passes (lockstep drivers).
    pub fn wait_brain(&mut self, timeout: std::time::Duration) {
        if self.deciding_task().is_some() || self.mind.brain.is_recognizing() {
            self.mind.brain.wait(timeout);
        } else if self.mind.registry.is_waiting()
            || self
                .home
                .summarizer
                .as_ref()
                .is_some_and(home::Summarizer::is_waiting)
        {
            // A skill's model call: look again shortly.
            std::thread::sleep(timeout.min(std::time::Duration::from_millis(2)));
        }
    }

    /// Notified when the brain has news, for async drivers (`None` for
    /// brains that answer at once).
    pub fn brain_waker(&self) -> Option<std::sync::Arc<tokio::sync::Notify>> {
        self.mind.brain.waker()
    }

    fn deciding_task(&self) -> Option<String> {
        if !matches!(self.state.mode, Mode::Exec | Mode::Charge) {
            return None;
        }
        self.state
            .queue
            .active()
            .filter(|t| matches!(t.react.phase, crate::react::Phase::Deciding { .. }))
            .map(|t| t.id.clone())
    }

    /// Emits what the brain said outside a decision (model calls for intents, notices).
    fn brain_notes(&mut self) {
        let mut notes = Vec::new();
        self.mind.brain.take_events(&mut notes);
        if let Some(memory) = &self.mind.memory {
            notes.extend(memory.take_notices().into_iter().map(|n| EventKind::Log {
                level: "info".into(),
                message: format!("memory: {n}"),
            }));
        }
        for kind in notes {
            self.emit(kind);
        }
    }

    /// The full current state.
    pub fn snapshot(&self) -> Snapshot {
        let s = &self.state;
        let t = &s.telemetry;
        Snapshot {
            thread_id: self.setup.thread_id.clone(),
            time: s.time,
            step: s.step,
            seq: s.seq,
            mode: s.mode,
            activity: s.activity,
            estop: s.estop,
            robot: RobotView::from(t),
            tasks: s.queue.views(),
            running: self.mind.runner.views(),
            approvals: s
                .approvals
                .iter()
                .map(|a| ApprovalView {
                    approval_id: a.id.clone(),
                    task_id: a.task_id.clone(),
                    op: a.op.clone(),
                    reason: a.reason.clone(),
                    risk: a.risk.clone(),
                    requested_by: a.requested_by.clone(),
                })
                .collect(),
            last_decision: s.last_decision.clone(),
            last_failure: s.last_failure.clone(),
            blocked_passages: t.blocked_passages.clone(),
            incidents: t.incidents_in_view.clone(),
            alerts: s
                .incidents
                .iter()
                .filter(|i| i.acknowledged_by.is_none())
                .cloned()
                .collect(),
            last_frame: s
                .shared
                .get("last_vision_result")
                .and_then(|v| v.get("frame"))
                .and_then(serde_json::Value::as_str)
                .map(String::from),
            brain: Some(self.mind.brain.kind()),
            world: self.setup.world.name.clone(),
            run: self.setup.run.clone(),
            devices: {
                let home = crate::hci::lock(&self.home.handle);
                if home.devices.devices().is_empty() {
                    serde_json::Value::Null
                } else {
                    home.devices.states()
                }
            },
            link: crate::protocol::LinkState::of(self.robot.link.is_connected()),
            memory: self
                .mind
                .memory
                .as_ref()
                .and_then(crate::memory::MemoryHandle::size),
        }
    }

    /// The engine's resumable state.
    pub fn state(&self) -> &KernelState {
        &self.state
    }

    /// The world the engine runs in.
    pub fn world(&self) -> &World {
        &self.setup.world
    }

    /// The run's thread id.
    pub fn thread_id(&self) -> &str {
        &self.setup.thread_id
    }

    /// Sim seconds since start.
    pub fn time(&self) -> f64 {
        self.state.time
    }

    /// Sim seconds per tick.
    pub fn dt(&self) -> f64 {
        self.setup.config.tick_s
    }

    /// Whether nothing is left to do: no runnable task, no running skill, no
    /// pending approval, no queued command and no running timer (a paused
    /// one waits for the operator, like an approval answered elsewhere).
    pub fn is_settled(&self) -> bool {
        self.traffic.pending.is_empty()
            && !self.state.timers.iter().any(|t| t.paused_left.is_none())
            && self.traffic.outbox.is_empty()
            && self.traffic.ready.is_empty()
            && self.mind.runner.running().is_empty()
            && self.state.approvals.is_empty()
            && self.state.queue.best_runnable().is_none()
    }

    /// Which brain decides.
    pub fn brain_kind(&self) -> BrainKind {
        self.mind.brain.kind()
    }

    /// Brings the robot to rest, records what is left and cleans up every
    /// skill (call once when the run ends); same as [`Engine::close`].
    pub fn shutdown(&mut self) {
        self.close();
    }

    /// Runs `f` over the skill runner and registry with a context whose
    /// robot requests wait in the outbox until the tick is on record (the
    /// last argument is the sim time); returns what `f` returned and the
    /// lines the skills asked to speak.
    fn with_skills<R>(
        &mut self,
        f: impl FnOnce(&mut SkillRunner, &mut SkillRegistry, &mut SkillContext<'_>, f64) -> R,
    ) -> (R, Vec<(String, SpeechTrack)>) {
        let mut speech = Vec::new();
        let mut ctx = SkillContext {
            world: &self.setup.world,
            link: &mut self.robot.held,
            telemetry: &self.state.telemetry,
            speech: &mut speech,
        };
        let result = f(
            &mut self.mind.runner,
            &mut self.mind.registry,
            &mut ctx,
            self.state.time,
        );
        (result, speech)
    }

    fn emit(&mut self, kind: EventKind) {
        if let (Some(memory), EventKind::Speech { text, .. }) = (&self.mind.memory, &kind) {
            memory.add_message("assistant", text);
        }
        self.state.seq += 1;
        self.traffic.outbox.push(Event {
            seq: self.state.seq,
            time: self.state.time,
            wall_ms: wall_ms(),
            thread_id: self.setup.thread_id.clone(),
            step: self.state.step,
            origin: self.traffic.cause.clone(),
            kind,
        });
    }

    /// Marks that a state-changing node ran: the step number advances.
    fn node(&mut self, _node: Node) {
        self.state.step += 1;
    }
}

impl Drop for Engine {
    /// An engine that ran and ends without [`Engine::close`] — a panic
    /// unwinding through a driver, a face that forgot — still stops the robot.
    fn drop(&mut self) {
        if self.robot.ticked && !self.robot.closed {
            self.robot.rests += 1;
            let _ = self.send_stop("rest", self.robot.rests);
        }
    }
}

/// The built-in skills as `config` wants them: which start lazily, where
/// `watch` keeps evidence frames, which camera it looks through and whether
/// it asks a vision model.
fn builtin_registry(config: &Config, thread_id: &str) -> Result<SkillRegistry, SkillError> {
    let frames = config.skills.keep_frames.then(|| {
        config
            .runs_dir
            .join("frames")
            .join(thread_id.replace(['/', '\\'], "_"))
    });
    let configs = serde_json::json!({ "watch": { "frames_dir": frames } });
    let mut watch = crate::skills::builtin::Watch::with_camera(camera_for(config));
    let mut listen = crate::skills::builtin::Listen::new();
    if config.llm.is_configured() {
        watch = watch.asking(&config.llm);
        listen = listen.transcribing(&config.llm);
    }
    let mut skills = crate::skills::builtin::all_with(watch, listen);
    if config.alert.webhook.is_some() {
        skills.push(Box::new(crate::skills::builtin::Notify::new(&config.alert)));
    }
    SkillRegistry::with_skills(skills, &configs, &config.skills.lazy)
}

/// The camera `[skills] camera` names (the simulated one without the
/// `camera` feature; the config check refuses `v4l` then).
fn camera_for(config: &Config) -> Box<dyn crate::perception::Camera> {
    #[cfg(feature = "camera")]
    if config.skills.camera == crate::config::CameraChoice::V4l {
        use crate::perception::v4l_camera::{Fallback, V4lCamera};
        return Box::new(Fallback::new(V4lCamera::new(&config.skills.video_dev)));
    }
    let _ = config;
    Box::new(crate::perception::SimCamera)
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn new_thread_id() -> String {
    let ms = wall_ms();
    format!("th-{ms:x}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalStatus, DecisionType, Door, Role, TaskStatus};

    #[test]
    fn a_viewer_s_command_is_refused_by_the_kernel_and_an_approval_names_who_asked() {
        let config = Config {
            thread_id: Some("test".into()),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let mut events = Vec::new();
        let viewer = Origin::new(Door::Web, "ws#2 127.0.0.1:40000").with_role(Role::Viewer);
        let study = || Command::Say {
            text: "go to the study".into(),
        };
        engine.submit(study(), viewer.clone());
        engine.tick(&mut events);
        let refused: Vec<&Event> = events
            .iter()
            .filter(|e| e.origin.as_ref() == Some(&viewer))
            .collect();
        assert!(
            matches!(&refused[..], [e] if matches!(&e.kind, EventKind::Error { code, message }
                if code == "watch_only" && message.contains("web viewer: ws#2 127.0.0.1:40000 may only watch"))),
            "{refused:?}"
        );
        assert!(
            engine.state().queue.tasks().is_empty(),
            "nothing was queued"
        );

        // An operator's trip to the restricted study waits for an approval
        // that names who asked, wherever it is shown.
        let page = Origin::new(Door::Web, "ws#3 127.0.0.1:40001");
        engine.submit(study(), page.clone());
        let requested =
            first_approval(&mut engine, &mut events).expect("the study waits for an approval");
        let EventKind::Approval {
            approval_id: id,
            requested_by,
            ..
        } = requested.kind
        else {
            unreachable!("an approval")
        };
        let during = requested.origin;
        assert_eq!(requested_by.as_ref(), Some(&page));
        assert_eq!(
            during, None,
            "asked for by the kernel's own loop, not a command"
        );
        assert_eq!(
            engine.snapshot().approvals[0].requested_by.as_ref(),
            Some(&page)
        );

        // Approved at the console: the answer is the console's, the card's asker stays.
        let mut answered = Vec::new();
        engine.take_in(
            Command::Approve { approval_id: id },
            Origin::console(),
            &mut answered,
        );
        let approved = answered
            .iter()
            .find(|e| {
                matches!(
                    e.kind,
                    EventKind::Approval {
                        status: ApprovalStatus::Approved,
                        ..
                    }
                )
            })
            .expect("approved");
        assert_eq!(approved.origin, Some(Origin::console()));
        assert!(
            matches!(&approved.kind, EventKind::Approval { requested_by: Some(o), .. } if *o == page)
        );
    }

    /// The first approval requested within 400 ticks (every event seen
    /// goes to `events`).
    fn first_approval(engine: &mut Engine, events: &mut Vec<Event>) -> Option<Event> {
        (0..400).find_map(|_| {
            let mut tick = Vec::new();
            engine.tick(&mut tick);
            let found = tick
                .iter()
                .find(|e| {
                    matches!(
                        &e.kind,
                        EventKind::Approval {
                            status: ApprovalStatus::Requested,
                            ..
                        }
                    )
                })
                .cloned();
            events.extend(tick);
            found
        })
    }

    #[test]
    fn a_home_assistant_press_only_asks_and_the_approving_operator_owns_the_task() {
        let config = Config {
            thread_id: Some("test".into()),
            ..Config::default()
        };
        let press = Origin::new(
            Door::HomeAssistant,
            "topic robobrain/robobrain/command/patrol",
        );
        for command in [
            Command::StartPatrol { route: None },
            Command::Say {
                text: "go charge".into(),
            },
        ] {
            let mut engine =
                Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
            let mut events = Vec::new();
            engine.submit(command.clone(), press.clone());
            let asked = first_approval(&mut engine, &mut events)
                .unwrap_or_else(|| panic!("{command:?} from Home Assistant waits for an approval"));
            let EventKind::Approval {
                approval_id: id,
                reason,
                ..
            } = asked.kind
            else {
                unreachable!("an approval")
            };
            assert!(reason.contains("only asks"), "{reason}");
            let moved = events.iter().any(|e| {
                matches!(&e.kind, EventKind::Skill { skill, status: crate::protocol::SkillStatus::Dispatched, .. }
                    if skill == "navigate_to" || skill == "dock")
            });
            assert!(!moved, "{command:?}: nothing moved before the approval");
            // The console approves: the task is the operator's from now on.
            engine.take_in(
                Command::Approve { approval_id: id },
                Origin::console(),
                &mut events,
            );
            let task = engine.state().queue.tasks()[0].clone();
            assert_eq!(task.origin.as_ref(), Some(&press));
            assert_eq!(task.vouched_by, Some(Origin::console()));
            assert!(task.only_asked().is_none());
            if matches!(command, Command::StartPatrol { .. }) {
                // The patrol's later legs (none restricted) run without asking again.
                let mut later = Vec::new();
                let again = first_approval(&mut engine, &mut later);
                assert!(again.is_none(), "asked again: {again:?}");
                let legs = later
                    .iter()
                    .filter(|e| matches!(&e.kind, EventKind::Skill { skill, status: crate::protocol::SkillStatus::Dispatched, .. } if skill == "navigate_to"))
                    .count();
                assert!(legs >= 2, "the patrol went on: {legs} legs");
            }
        }
        // The E-stop from the same door acts at once.
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let mut events = Vec::new();
        engine.take_in(Command::EStop, press, &mut events);
        assert_eq!(engine.state().mode, crate::protocol::Mode::Safe);
    }

    pub(crate) fn run(commands: &[(f64, Command)], until: f64) -> (Engine, Vec<Event>) {
        let config = Config {
            thread_id: Some("test".into()),
            ..Config::default()
        };
        let world = World::builtin("apartment").unwrap();
        let mut engine = Engine::simulated(&config, world).unwrap();
        let mut events = Vec::new();
        let mut pending: Vec<(f64, Command)> = commands.to_vec();
        while engine.time() < until {
            let now = engine.time();
            pending.retain(|(at, cmd)| {
                if *at <= now {
                    engine.submit(cmd.clone(), Origin::console());
                    false
                } else {
                    true
                }
            });
            engine.tick(&mut events);
        }
        (engine, events)
    }

    pub(crate) fn decisions(events: &[Event]) -> Vec<DecisionType> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Decision { decision_type, .. } => Some(*decision_type),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_goto_runs_to_the_end_and_events_are_numbered_without_gaps() {
        let (engine, events) = run(
            &[(
                0.5,
                Command::Say {
                    text: "去厨房".into(),
                },
            )],
            120.0,
        );
        for e in &events {
            if !matches!(
                e.kind,
                EventKind::Telemetry { .. } | EventKind::Skill { .. }
            ) {
                eprintln!("{:7.1} {}", e.time, serde_json::to_string(&e.kind).unwrap());
            }
        }
        let d = decisions(&events);
        assert_eq!(d.first(), Some(&DecisionType::Continue));
        assert_eq!(d.last(), Some(&DecisionType::Finish));
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(
            engine.state().queue.last().unwrap().status,
            TaskStatus::Succeeded
        );
        assert_eq!(engine.state().telemetry.zone.as_deref(), Some("kitchen"));
        assert!(engine.is_settled());
    }

    fn show(events: &[Event]) {
        for e in events {
            if !matches!(
                e.kind,
                EventKind::Telemetry { .. } | EventKind::Update { .. }
            ) && !matches!(
                &e.kind,
                EventKind::Skill {
                    status: crate::protocol::SkillStatus::Feedback,
                    ..
                }
            ) {
                eprintln!("{:7.1} {}", e.time, serde_json::to_string(&e.kind).unwrap());
            }
        }
    }

    fn say(at: f64, text: &str) -> (f64, Command) {
        (at, Command::Say { text: text.into() })
    }

    fn inject(at: f64, fault: crate::link::Fault) -> (f64, Command) {
        (at, Command::Inject { fault })
    }

    #[test]
    fn blocked_on_the_way_replans_around() {
        use crate::link::Fault;
        let (engine, events) = run(
            &[
                say(0.5, "go to the kitchen"),
                inject(
                    3.0,
                    Fault::Block {
                        passage: "kitchen_door".into(),
                    },
                ),
            ],
            200.0,
        );
        show(&events);
        let d = decisions(&events);
        assert!(d.contains(&DecisionType::Replan), "{d:?}");
        assert_eq!(d.last(), Some(&DecisionType::Finish));
        assert_eq!(engine.state().telemetry.zone.as_deref(), Some("kitchen"));
    }

    #[test]
    fn no_path_waits_retries_then_asks() {
        use crate::link::Fault;
        let (engine, events) = run(
            &[
                inject(
                    0.2,
                    Fault::Block {
                        passage: "hall_door".into(),
                    },
                ),
                say(0.5, "去卧室"),
            ],
            200.0,
        );
        show(&events);
        let d = decisions(&events);
        assert_eq!(d.last(), Some(&DecisionType::AskHuman), "{d:?}");
        assert_eq!(
            engine.state().queue.last().unwrap().status,
            TaskStatus::WaitingHuman
        );
    }

    #[test]
    fn low_battery_preempts_to_the_charger_and_the_patrol_resumes() {
        use crate::link::Fault;
        let (engine, events) = run(
            &[
                inject(0.1, Fault::SetBattery { pct: 23.0 }),
                say(0.5, "巡逻"),
            ],
            900.0,
        );
        show(&events);
        let modes: Vec<Mode> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Mode { to, .. } => Some(*to),
                _ => None,
            })
            .collect();
        assert!(
            modes.windows(2).any(|w| w == [Mode::Charge, Mode::Exec]),
            "{modes:?}"
        );
        assert!(
            engine
                .state()
                .queue
                .tasks()
                .iter()
                .all(|t| t.status == TaskStatus::Succeeded)
        );
    }

    #[test]
    fn a_user_task_waiting_when_the_battery_runs_low_does_not_make_the_loop_flap() {
        use crate::link::Fault;
        // A goto runs; a patrol is queued over it (user interrupt), then the battery drops.
        let (engine, events) = run(
            &[
                say(0.5, "go to the bedroom"),
                say(2.0, "巡逻"),
                inject(2.0, Fault::SetBattery { pct: 15.0 }),
            ],
            120.0,
        );
        let switches = events
            .iter()
            .filter(|e| {
                matches!(
                    &e.kind,
                    EventKind::Decision {
                        decision_type: DecisionType::SwitchTask,
                        ..
                    }
                )
            })
            .count();
        assert!(
            switches <= 2,
            "the loop flapped: {switches} SWITCH_TASK decisions"
        );
        assert!(
            engine.state().step < 5_000,
            "step ran away: {}",
            engine.state().step
        );
        assert!(events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Mode {
                to: Mode::Charge,
                ..
            }
        )));
    }
}
