//! The wire between the core and its faces: [`Command`] goes face → core,
//! [`Event`] goes core → face, and a [`Snapshot`] paints a face's first frame.
//!
//! Every type here has a serde JSON form (tagged enums, `snake_case`)
//! documented in `docs/protocol.md`; the console, the web page, the desktop
//! app and the scenario runner speak exactly this. It sits at the bottom of
//! the core: it depends on [`crate::geometry`] and nothing else of the crate.
//!
//! - [`robot`], [`risk`], [`memory`]: the values events carry that lower
//!   layers use too (faults, navigation feedback, a skill's risk, a memory's use).
//! - [`run`]: what a run is made of ([`RunInfo`]), shown by every face.
//! - [`frame`]: what a remote face gets over a wire (`hello`, then snapshot and events).
//! - [`line`]: operator lines (a command as JSON, or words to say) → a [`Command`].
//! - [`describe`]: an [`Event`] in words, the one wording of every Rust face.
//! - [`origin`]: where a command came from ([`Origin`]), stamped by its door.
//! - [`understanding`]: the language pipeline as data and an utterance's trace through it.

pub mod describe;
pub mod fleet;
pub mod frame;
pub mod line;
pub mod memory;
pub mod origin;
pub mod risk;
pub mod robot;
pub mod run;
#[cfg(feature = "ts")]
pub mod typescript;
pub mod understanding;

pub use fleet::{FleetApproval, FleetBoard, Reply, ReplyStatus, RobotRow};
pub use frame::{Hello, Role, ServerMessage, SkillView};
pub use memory::{MemorySize, MemoryUse};
pub use origin::{Door, Origin};
pub use risk::Risk;
pub use robot::{Fault, Incident, NavFeedback};
pub use run::RunInfo;
pub use understanding::{Outcome, Reading, RowTrace, Trace, Understander};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::geometry::{Point, Pose, Twist};

/// A request from a face to the core. It is handed over with its
/// [`Origin`], which its door stamps (never part of the command's JSON).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// An utterance from the operator, in Chinese or English.
    Say {
        /// What was said or typed.
        text: String,
    },
    /// Approve a pending approval as proposed.
    Approve {
        /// The approval's id.
        approval_id: String,
    },
    /// Approve a pending approval with edited arguments (re-validated).
    Edit {
        /// The approval's id.
        approval_id: String,
        /// The replacement arguments for the op.
        args: Value,
    },
    /// Refuse a pending approval.
    Reject {
        /// The approval's id.
        approval_id: String,
        /// Why, in the operator's words.
        #[serde(default)]
        reason: String,
    },
    /// Pause the active task (the base stops; the task keeps its place).
    Pause,
    /// Resume the paused tasks (those the E-stop set aside too) and retry
    /// tasks waiting for help: the operator's deliberate start. Refused
    /// while the E-stop is latched ([`Command::ResetEStop`] first).
    Resume,
    /// Cancel the active task.
    Stop,
    /// Emergency stop: cancel everything and stop the base, no brain involved.
    #[serde(rename = "estop")]
    EStop,
    /// Reset (release) a latched E-stop. A reset is not a start (ISO 13850,
    /// IEC 60204-1): nothing moves after it; the tasks the E-stop set aside
    /// stay paused until a [`Command::Resume`].
    #[serde(rename = "reset_estop")]
    ResetEStop,
    /// Start a patrol of a route (the world's default route when `None`).
    StartPatrol {
        /// Route name from the world file.
        #[serde(default)]
        route: Option<String>,
    },
    /// Acknowledge raised alerts (every open one, or the one named): the
    /// activity leaves ALERT and a patrol waiting on it goes on.
    Acknowledge {
        /// The incident's id; every open incident when absent.
        #[serde(default)]
        incident_id: Option<String>,
        /// Who acknowledges (shown in the record).
        #[serde(default = "operator")]
        by: String,
    },
    /// Inject a simulated fault (refused on real hardware).
    Inject {
        /// The fault.
        fault: Fault,
    },
    /// Stop the runtime.
    Shutdown,
    /// Run one skill call as a task of its own, for callers outside the
    /// brain (an MCP client): it goes through the guardrails, the approval
    /// policy and the ledger like any step, and its outcome is reported in
    /// events. The `task` event that queues it has the reason `call <call_id>`,
    /// so the caller can follow its task.
    Call {
        /// The caller's id for this call, echoed in the queuing task event's reason.
        call_id: String,
        /// Skill name from the registry.
        skill: String,
        /// Arguments, checked against the skill's schema by the guardrails.
        #[serde(default)]
        args: Value,
    },
    /// Run several skill calls one after the other as one task (seed 000
    /// §3.5 `execute_chain`, §8.3 serial execution): each step goes through
    /// the guardrails, the policy and the ledger like any other, and a step
    /// that fails is handled by its skill's error map (retry, skip, or ask
    /// the operator) before the next one starts. The queuing task event's
    /// reason is `chain <call_id>`.
    Chain {
        /// The caller's id for this chain, echoed in the queuing task event's reason.
        call_id: String,
        /// The calls, in order (at least one).
        calls: Vec<SkillCall>,
    },
    /// A door of the run (an MQTT connection) reports what the operator
    /// must know — a subscription or a publish the broker refused (an
    /// `error` event with `code`), or that all it announced was taken (a
    /// `log` note, no code). Made inside the core only: it has no wire
    /// form, so no face can send one.
    #[serde(skip)]
    Report {
        /// The `error` event's code; `None`: an `info` log.
        code: Option<String>,
        /// What happened, in words.
        message: String,
    },
}

/// The longest utterance the core takes ([`Command::Say`]), in bytes of
/// UTF-8: 4 KiB, about 1 300 Chinese characters or a page of English. A
/// longer one is refused before any parsing (`utterance_too_long`).
pub const MAX_UTTERANCE_BYTES: usize = 4 * 1024;

/// The longest operator line a face reads — a line on stdin, a WebSocket
/// frame, a desktop IPC line — in bytes: 16 KiB, room for a command as
/// JSON around a maximal utterance (escaped) or an edit's arguments. A
/// longer line is refused unread (`line_too_long`).
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// Input bigger than its documented limit, refused before any parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TooLong {
    /// An utterance over [`MAX_UTTERANCE_BYTES`].
    #[error("an utterance of {bytes} bytes is over the {limit}-byte limit; it was not parsed")]
    Utterance {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// An operator line (or frame) over [`MAX_LINE_BYTES`].
    #[error("a line of {bytes} bytes is over the {limit}-byte limit; it was not parsed")]
    Line {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

impl TooLong {
    /// The `error` code faces report it with.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Utterance { .. } => "utterance_too_long",
            Self::Line { .. } => "line_too_long",
        }
    }
}

impl Command {
    /// The `cmd` tag as written in JSON (`say`, `estop`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Say { .. } => "say",
            Self::Approve { .. } => "approve",
            Self::Edit { .. } => "edit",
            Self::Reject { .. } => "reject",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Stop => "stop",
            Self::EStop => "estop",
            Self::ResetEStop => "reset_estop",
            Self::StartPatrol { .. } => "start_patrol",
            Self::Acknowledge { .. } => "acknowledge",
            Self::Inject { .. } => "inject",
            Self::Shutdown => "shutdown",
            Self::Call { .. } => "call",
            Self::Chain { .. } => "chain",
            // Internal: no wire form.
            Self::Report { .. } => "report",
        }
    }

    /// Whether the command overtakes queued input: the E-stop, `stop` and
    /// `pause` never wait behind the kernel's work on other commands.
    pub fn is_urgent(&self) -> bool {
        matches!(self, Self::EStop | Self::Stop | Self::Pause)
    }

    /// Refuses an utterance over [`MAX_UTTERANCE_BYTES`] before anything
    /// parses it.
    pub fn check_limits(&self) -> Result<(), TooLong> {
        match self {
            Self::Say { text } if text.len() > MAX_UTTERANCE_BYTES => Err(TooLong::Utterance {
                bytes: text.len(),
                limit: MAX_UTTERANCE_BYTES,
            }),
            _ => Ok(()),
        }
    }
}

/// One skill call of a [`Command::Chain`].
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillCall {
    /// Skill name from the registry.
    pub skill: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Value,
}

/// The kernel's mode, decided by hard rules before any brain runs.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mode {
    /// Safety override: everything cancelled, base stopped.
    Safe,
    /// Battery low: the charge task runs.
    Charge,
    /// Normal execution: the ReAct loop runs the active task.
    Exec,
    /// Nothing to do, or waiting for the operator.
    #[default]
    Idle,
}

impl Mode {
    /// The name as shown (`SAFE`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "SAFE",
            Self::Charge => "CHARGE",
            Self::Exec => "EXEC",
            Self::Idle => "IDLE",
        }
    }
}

/// What the robot is doing, as an operator would say it (seed 000).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Activity {
    /// Nothing.
    #[default]
    Idle,
    /// On a patrol route.
    Patrolling,
    /// Carrying out an operator's request (or charging).
    Responding,
    /// An incident is in view.
    Alert,
}

impl Activity {
    /// The name as shown (`PATROLLING`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "IDLE",
            Self::Patrolling => "PATROLLING",
            Self::Responding => "RESPONDING",
            Self::Alert => "ALERT",
        }
    }
}

/// Task priority, highest first (seed 003 §8.1).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Non-critical work.
    Background = 0,
    /// The operator's current instruction.
    Main = 1,
    /// A new goal given while another task runs.
    UserInterrupt = 2,
    /// Low battery.
    Battery = 3,
    /// Safety.
    Safety = 4,
}

/// Life cycle of a task.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// In the queue, not started.
    Queued,
    /// The active task.
    Running,
    /// Set aside by a higher-priority task; resumes later.
    Preempted,
    /// Paused by the operator.
    Paused,
    /// Stuck: waiting for the operator to say retry or cancel.
    WaitingHuman,
    /// Done.
    Succeeded,
    /// Given up by the brain or the loop guards.
    Aborted,
    /// Cancelled by the operator.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Aborted | Self::Cancelled)
    }
}

/// The brain's decision type (seed 003 R2).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DecisionType {
    /// Keep going: dispatch the next step or let the running one continue.
    Continue,
    /// Change the plan (another route, wait, skip) and go on.
    Replan,
    /// Try the failed step again as it was.
    Retry,
    /// Set the active task aside for a higher-priority one.
    SwitchTask,
    /// Stop and ask the operator.
    AskHuman,
    /// The task is done.
    Finish,
    /// Give the task up.
    Abort,
}

impl DecisionType {
    /// The name as shown (`REPLAN`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "CONTINUE",
            Self::Replan => "REPLAN",
            Self::Retry => "RETRY",
            Self::SwitchTask => "SWITCH_TASK",
            Self::AskHuman => "ASK_HUMAN",
            Self::Finish => "FINISH",
            Self::Abort => "ABORT",
        }
    }
}

/// Which brain produced a decision.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrainKind {
    /// The deterministic rule brain.
    Rule,
    /// An OpenAI-compatible model.
    Model,
    /// The rule brain standing in for a failed model.
    Fallback,
    /// Decisions given by a scenario.
    Scripted,
    /// The kernel's hard rules (E-stop, loop guards), no brain at all.
    Kernel,
}

/// One operation a decision asks for.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Start a skill.
    Dispatch {
        /// Skill name from the registry.
        skill: String,
        /// Arguments, checked against the skill's schema.
        args: Value,
    },
    /// Cancel a running skill goal.
    Cancel {
        /// The goal's id.
        goal_id: String,
    },
    /// Do nothing for a while, then decide again.
    Wait {
        /// Sim seconds.
        seconds: f64,
    },
}

/// A skill goal's life cycle, as reported in events.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillStatus {
    /// Sent.
    Dispatched,
    /// Progress.
    Feedback,
    /// Done, successfully.
    Succeeded,
    /// Ended with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// An approval's life cycle.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for the operator.
    Requested,
    /// Approved as proposed.
    Approved,
    /// Approved with edited arguments.
    Edited,
    /// An edit was refused by the guardrails; the prompt stays open.
    EditRefused,
    /// Refused.
    Rejected,
}

/// Which track a spoken line came from (seed 002).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeechTrack {
    /// A filled reply template, spoken at once.
    Template,
    /// A summary of what was done.
    Summary,
    /// An answer, a question or a notice.
    Answer,
}

/// The guardrails' verdict on one op.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The op may run.
    Allowed,
    /// The op may run once an operator approves.
    NeedsApproval,
    /// The op may not run.
    Rejected,
}

/// A task as shown to faces.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskView {
    /// Task id (`t1`, `t2`, …).
    pub id: String,
    /// What it is, in words (`go to kitchen`, `patrol: kitchen → bedroom`).
    pub title: String,
    /// Its kind (`goto`, `patrol`, `charge`).
    pub kind: String,
    /// Its priority.
    pub priority: Priority,
    /// Its status.
    pub status: TaskStatus,
    /// Plan step it is on, from 0.
    pub step: usize,
    /// Steps in its plan.
    pub steps: usize,
    /// Sim time it must finish by, if any.
    pub deadline: Option<f64>,
}

/// A running skill goal as shown to faces.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningSkillView {
    /// Goal id.
    pub goal_id: String,
    /// Skill name.
    pub skill: String,
    /// Its arguments.
    pub args: Value,
    /// Sim time it started.
    pub started_at: f64,
    /// Sim time it times out.
    pub deadline: f64,
    /// Resources it holds.
    pub resources: Vec<String>,
    /// Latest feedback.
    pub feedback: Option<NavFeedback>,
}

/// A pending approval as shown to faces.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalView {
    /// Approval id.
    pub approval_id: String,
    /// Task it belongs to.
    pub task_id: String,
    /// The op waiting for approval.
    pub op: Op,
    /// Why approval is needed (policy rule).
    pub reason: String,
    /// Risk level of the skill.
    pub risk: String,
    /// Who asked for the task the op belongs to (absent for the robot's
    /// own tasks: a charge, a patrol round, a resumed run's older tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<Origin>,
}

/// The last decision, as shown to faces.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionView {
    /// Iteration within the task.
    pub iteration: u32,
    /// Decision type.
    pub decision_type: DecisionType,
    /// The brain's reason.
    pub reason: String,
    /// Which brain decided.
    pub brain: BrainKind,
}

/// The robot's state as the brain sees it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RobotView {
    /// Pose (meaningless while `pose_unknown`).
    pub pose: Pose,
    /// The robot has not said where it is yet (a real robot before its
    /// first map pose): it is in no zone, and every motion asks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pose_unknown: bool,
    /// Velocity.
    pub twist: Twist,
    /// Battery, percent.
    pub battery_pct: f64,
    /// On the dock and charging.
    pub charging: bool,
    /// Zone it is in.
    pub zone: Option<String>,
    /// Distance to the running base goal.
    pub distance_to_target: Option<f64>,
    /// Resources in use.
    pub busy: Vec<String>,
    /// The running base goal's planned path, start first (empty when idle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<Point>,
}

/// Everything a face needs to paint its first frame.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Thread id of this run.
    pub thread_id: String,
    /// Sim seconds since start.
    pub time: f64,
    /// Monotonic step number.
    pub step: u64,
    /// Sequence number of the last event emitted before this snapshot: a
    /// face that takes it applies only events with a higher `seq`.
    #[serde(default)]
    pub seq: u64,
    /// Kernel mode.
    pub mode: Mode,
    /// Activity.
    pub activity: Activity,
    /// Whether an E-stop is latched.
    pub estop: bool,
    /// The robot.
    pub robot: RobotView,
    /// Every task not yet forgotten, queue order (active first).
    pub tasks: Vec<TaskView>,
    /// Running skill goals.
    pub running: Vec<RunningSkillView>,
    /// Approvals waiting for the operator.
    pub approvals: Vec<ApprovalView>,
    /// The last decision.
    pub last_decision: Option<DecisionView>,
    /// The last failure, in words.
    pub last_failure: Option<String>,
    /// Passages blocked.
    pub blocked_passages: Vec<String>,
    /// Incidents in view.
    pub incidents: Vec<Incident>,
    /// Alerts raised and not yet acknowledged.
    #[serde(default)]
    pub alerts: Vec<IncidentRecord>,
    /// The newest frame `watch` kept (a PNG's path: an alert's evidence or
    /// the last ordinary look), when `[skills] keep_frames` is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_frame: Option<String>,
    /// The brain in use (`rule`, `model`, …).
    pub brain: Option<BrainKind>,
    /// World name.
    pub world: String,
    /// What the run is made of, once assembled (absent in scripted runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInfo>,
    /// Smart-home devices: id → `{state, online, room}` (absent without devices).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub devices: Value,
    /// The robot link: `up`, or `down` (then the kernel is in SAFE); left
    /// out while up.
    #[serde(default, skip_serializing_if = "LinkState::is_up")]
    pub link: LinkState,
    /// How much the run remembers, as of the memory thread's last report
    /// (absent without memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<memory::MemorySize>,
}

/// Whether the brain hears the robot.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// Connected.
    #[default]
    Up,
    /// Lost (a `tcp://` robot that stopped answering); the link reconnects by itself.
    Down,
}

impl LinkState {
    /// Up or down from a link's `is_connected`.
    pub fn of(connected: bool) -> Self {
        if connected { Self::Up } else { Self::Down }
    }

    /// Whether it is up.
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
    pub fn is_up(&self) -> bool {
        *self == Self::Up
    }

    /// `up` or `down`, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Up => "up",
            Self::Down => "down",
        }
    }
}

fn operator() -> String {
    "operator".into()
}

/// An incident the robot raised an alert about (seed 000 §3, `alert`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentRecord {
    /// `i<n>`.
    pub id: String,
    /// Sim time it was raised.
    pub time: f64,
    /// Where.
    pub zone: String,
    /// What was seen (`smoke`, …).
    pub kinds: Vec<String>,
    /// The scene in a sentence.
    pub description: String,
    /// The frame that shows it, by path (never inline).
    pub evidence: Option<String>,
    /// The vision result behind it.
    pub vision: Value,
    /// `open`, or `acknowledged`.
    pub status: AlertStatus,
    /// Who acknowledged it, once someone has.
    pub acknowledged_by: Option<String>,
    /// When.
    pub acknowledged_at: Option<f64>,
}

/// Where an alert stands.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    /// Raised; the activity is ALERT until someone acknowledges it.
    Open,
    /// An operator has seen it.
    Acknowledged,
}

/// A ReAct or kernel node, for `update` events and step numbering.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// K1.
    HciIngress,
    /// K2.
    TelemetrySync,
    /// K3.
    WorldUpdate,
    /// K4.
    ModeArbitrate,
    /// K5.
    TaskQueueUpdate,
    /// K6.
    KernelRoute,
    /// R1.
    BuildObservation,
    /// R2.
    Decide,
    /// R3.
    CompileOps,
    /// R4.
    Guardrails,
    /// R5.
    ApprovalInterrupt,
    /// R6.
    Dispatch,
    /// R7.
    ObserveResult,
    /// R8.
    StopOrLoop,
}

/// One model call, as accounted in `llm_call` events.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmCallView {
    /// What it was for (`decide`, `repair`, `intent`, …).
    pub purpose: String,
    /// The model.
    pub model: String,
    /// `ok`, or the error's kind (`timeout`, `rate_limited`, `server_error`,
    /// `refused`, `connection`, `stream_error`, `truncated`, `bad_reply`).
    pub outcome: String,
    /// HTTP attempts made (1 + retries).
    pub attempts: u32,
    /// Wall milliseconds from request to the last byte.
    pub latency_ms: u64,
    /// Wall milliseconds to the first streamed token, when streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// Prompt tokens, as the endpoint reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, as the endpoint reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// How the reply was asked for (`tools`, `json_schema`, `json`).
    pub structured: String,
    /// What went wrong, when something did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// What happened. The `kind` tag names the event in JSON.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// Full state, sent first and on request.
    Snapshot {
        /// The state.
        snapshot: Box<Snapshot>,
    },
    /// What the run is made of (brain, memory, MCP services, robot), once
    /// the session builder has assembled it; the snapshot's `run` from then on.
    Run {
        /// The run.
        run: RunInfo,
    },
    /// A node ran and changed these fields.
    Update {
        /// Which node.
        node: Node,
        /// Changed fields, by name.
        changed: Value,
    },
    /// An utterance was understood (or not).
    Intent {
        /// What was said.
        utterance: String,
        /// What it was taken to mean (`goto`, `patrol`, `stop`, `unknown`, …).
        intent: String,
        /// Its arguments.
        args: Value,
        /// Whether the local rule parser handled it (no model).
        processed_locally: bool,
    },
    /// How one utterance went through the language pipeline
    /// ([`understanding::PIPELINE`]): who took it, with which intent and
    /// slots, and why each understander asked before it passed.
    Understanding {
        /// What was said.
        utterance: String,
        /// The trace.
        #[serde(flatten)]
        trace: Trace,
    },
    /// The brain decided.
    Decision {
        /// Task it is about.
        task_id: String,
        /// Iteration within the task, from 1.
        iteration: u32,
        /// Decision type.
        decision_type: DecisionType,
        /// The brain's reason.
        reason: String,
        /// Which brain.
        brain: BrainKind,
        /// The ops it asked for.
        ops: Vec<Op>,
    },
    /// The guardrails judged an op.
    Guardrail {
        /// Task it is about.
        task_id: String,
        /// The op.
        op: Op,
        /// The verdict.
        verdict: Verdict,
        /// Why.
        reason: String,
    },
    /// The kernel changed mode.
    Mode {
        /// Old mode.
        from: Mode,
        /// New mode.
        to: Mode,
        /// Why.
        reason: String,
    },
    /// The activity changed.
    Activity {
        /// Old activity.
        from: Activity,
        /// New activity.
        to: Activity,
        /// Why.
        reason: String,
    },
    /// A task changed.
    Task {
        /// The task as it is now.
        task: TaskView,
        /// Why it changed.
        reason: String,
    },
    /// A skill goal changed.
    Skill {
        /// Goal id.
        goal_id: String,
        /// Skill name.
        skill: String,
        /// New status.
        status: SkillStatus,
        /// Its arguments.
        args: Value,
        /// Progress, with `feedback`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<NavFeedback>,
        /// Error code, with `failed`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Detail.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        message: String,
        /// What the skill returned, with `succeeded` (left out when it returned nothing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
    },
    /// An approval changed.
    Approval {
        /// Approval id.
        approval_id: String,
        /// Task it belongs to.
        task_id: String,
        /// New status.
        status: ApprovalStatus,
        /// The op (edited args when edited).
        op: Op,
        /// Why (policy rule, operator's reason, or refusal).
        reason: String,
        /// Who asked for the task the op belongs to, as on the approval
        /// card (the envelope's `origin` is who approved or rejected).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested_by: Option<Origin>,
    },
    /// An alert was raised, or acknowledged (`incident.acknowledged_by` set).
    Alert {
        /// The incident.
        incident: Box<IncidentRecord>,
    },
    /// The robot said something.
    Speech {
        /// The words.
        text: String,
        /// Which track.
        track: SpeechTrack,
        /// The WAV file the line is voiced into, when there is a voice.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        audio: Option<String>,
    },
    /// The robot's state (throttled).
    Telemetry {
        /// Pose.
        pose: Pose,
        /// Battery percent.
        battery_pct: f64,
        /// Charging.
        charging: bool,
        /// Zone.
        zone: Option<String>,
        /// Distance to the running base goal.
        distance_to_target: Option<f64>,
        /// Busy resources.
        busy: Vec<String>,
    },
    /// A smart-home device changed (state, availability) — after a call,
    /// a fault, or a report from the device.
    Device {
        /// The device's id.
        device: String,
        /// Its room.
        room: String,
        /// Its state now.
        state: Value,
        /// Whether it answers.
        online: bool,
        /// Why it changed (`devices.invoke p3.s1`, `fault`, `reported`).
        reason: String,
    },
    /// A fault was injected.
    Fault {
        /// The fault.
        fault: Fault,
    },
    /// Text a model is writing, as it streams.
    Token {
        /// What the call is for (`decide`, `repair`, `intent`, `summary`).
        purpose: String,
        /// The new text (content, or a tool call's arguments).
        text: String,
    },
    /// One model call ended: its usage and latency, kept for the audit.
    LlmCall(Box<LlmCallView>),
    /// Memory put into a model decision's input (explainable retrieval):
    /// what was searched for and each memory used, with its scores and why.
    Memory {
        /// What was searched for (the operator's last utterance).
        query: String,
        /// Retrieval mode (`bm25`, `dense`, `hybrid`).
        mode: String,
        /// The memories used, best first.
        used: Vec<MemoryUse>,
        /// Estimated tokens of the memory section.
        tokens: usize,
        /// The section's token budget.
        budget: usize,
        /// Items (turns, memories, summaries) left out for the budget.
        dropped: usize,
    },
    /// A note for the log.
    Log {
        /// `info`, `warn` or `debug`.
        level: String,
        /// The note.
        message: String,
    },
    /// Something went wrong that the operator should see.
    Error {
        /// A stable code (`invalid_command`, `inject_refused`, …).
        code: String,
        /// What happened.
        message: String,
    },
}

impl EventKind {
    /// The `kind` tag as written in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Snapshot { .. } => "snapshot",
            Self::Run { .. } => "run",
            Self::Update { .. } => "update",
            Self::Intent { .. } => "intent",
            Self::Understanding { .. } => "understanding",
            Self::Decision { .. } => "decision",
            Self::Guardrail { .. } => "guardrail",
            Self::Mode { .. } => "mode",
            Self::Activity { .. } => "activity",
            Self::Task { .. } => "task",
            Self::Skill { .. } => "skill",
            Self::Approval { .. } => "approval",
            Self::Alert { .. } => "alert",
            Self::Speech { .. } => "speech",
            Self::Telemetry { .. } => "telemetry",
            Self::Fault { .. } => "fault",
            Self::Device { .. } => "device",
            Self::Token { .. } => "token",
            Self::LlmCall(_) => "llm_call",
            Self::Memory { .. } => "memory",
            Self::Log { .. } => "log",
            Self::Error { .. } => "error",
        }
    }
}

/// One event with its envelope.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Sequence number within the run, from 1, no gaps.
    pub seq: u64,
    /// Sim seconds since start.
    pub time: f64,
    /// Wall clock, milliseconds since the Unix epoch.
    pub wall_ms: u64,
    /// The run's thread id.
    pub thread_id: String,
    /// Monotonic step number when it happened.
    pub step: u64,
    /// The command this event answers, by where it came from: present on
    /// every event the kernel emitted while taking a command in, absent on
    /// what the robot, the brain or time did on their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// The event as a JSON value (the wire form).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_through_their_documented_json() {
        let cmd: Command = serde_json::from_str(r#"{"cmd":"say","text":"去厨房"}"#).unwrap();
        assert_eq!(
            cmd,
            Command::Say {
                text: "去厨房".into()
            }
        );
        let cmd: Command = serde_json::from_str(
            r#"{"cmd":"inject","fault":{"fault":"block","passage":"hall_door"}}"#,
        )
        .unwrap();
        assert_eq!(
            cmd,
            Command::Inject {
                fault: Fault::Block {
                    passage: "hall_door".into()
                }
            }
        );
        let cmd: Command = serde_json::from_str(r#"{"cmd":"estop"}"#).unwrap();
        assert_eq!(cmd, Command::EStop);
        let cmd: Command = serde_json::from_str(r#"{"cmd":"reset_estop"}"#).unwrap();
        assert_eq!(cmd, Command::ResetEStop);
        assert_eq!(
            serde_json::to_string(&Command::ResetEStop).unwrap(),
            r#"{"cmd":"reset_estop"}"#
        );
    }

    #[test]
    fn a_command_s_name_is_its_json_tag() {
        let commands = [
            Command::Say { text: "hi".into() },
            Command::Approve {
                approval_id: "a1".into(),
            },
            Command::Edit {
                approval_id: "a1".into(),
                args: Value::Null,
            },
            Command::Reject {
                approval_id: "a1".into(),
                reason: String::new(),
            },
            Command::Pause,
            Command::Resume,
            Command::Stop,
            Command::EStop,
            Command::ResetEStop,
            Command::StartPatrol { route: None },
            Command::Acknowledge {
                incident_id: None,
                by: "operator".into(),
            },
            Command::Inject {
                fault: Fault::Stall,
            },
            Command::Shutdown,
            Command::Call {
                call_id: "c".into(),
                skill: "speak".into(),
                args: Value::Null,
            },
            Command::Chain {
                call_id: "c".into(),
                calls: Vec::new(),
            },
        ];
        for command in commands {
            let v = serde_json::to_value(&command).unwrap();
            assert_eq!(v["cmd"], command.name(), "{command:?}");
        }
    }

    #[test]
    fn an_event_s_origin_is_in_its_envelope_and_left_out_when_none() {
        let mut ev = Event {
            seq: 1,
            time: 0.0,
            wall_ms: 0,
            thread_id: "th".into(),
            step: 1,
            origin: Some(Origin::new(Door::Mcp, "stdio mcp-1")),
            kind: EventKind::Log {
                level: "info".into(),
                message: "m".into(),
            },
        };
        let v = ev.to_json();
        assert_eq!(
            v["origin"],
            serde_json::json!({"door": "mcp", "role": "operator", "detail": "stdio mcp-1"})
        );
        assert_eq!(serde_json::from_value::<Event>(v).unwrap(), ev);
        ev.origin = None;
        assert!(ev.to_json().get("origin").is_none());
    }

    #[test]
    fn events_flatten_their_kind_into_the_envelope() {
        let ev = Event {
            seq: 3,
            time: 1.5,
            wall_ms: 0,
            thread_id: "th".into(),
            step: 7,
            origin: None,
            kind: EventKind::Mode {
                from: Mode::Idle,
                to: Mode::Exec,
                reason: "task t1".into(),
            },
        };
        let v = ev.to_json();
        assert_eq!(v["kind"], "mode");
        assert_eq!(v["from"], "IDLE");
        assert_eq!(v["to"], "EXEC");
        assert_eq!(v["seq"], 3);
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, ev);
    }

    #[test]
    fn model_calls_and_tokens_have_their_documented_json() {
        let call = EventKind::LlmCall(Box::new(LlmCallView {
            purpose: "decide".into(),
            model: "qwen-max".into(),
            outcome: "ok".into(),
            attempts: 1,
            latency_ms: 12,
            first_token_ms: Some(3),
            prompt_tokens: Some(900),
            completion_tokens: Some(40),
            structured: "tools".into(),
            error: String::new(),
        }));
        let v = serde_json::to_value(&call).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "llm_call", "purpose": "decide", "model": "qwen-max",
                "outcome": "ok", "attempts": 1, "latency_ms": 12, "first_token_ms": 3,
                "prompt_tokens": 900, "completion_tokens": 40, "structured": "tools"})
        );
        assert_eq!(serde_json::from_value::<EventKind>(v).unwrap(), call);
        let token = EventKind::Token {
            purpose: "decide".into(),
            text: "{\"ty".into(),
        };
        assert_eq!(
            serde_json::to_value(&token).unwrap(),
            serde_json::json!({"kind": "token", "purpose": "decide", "text": "{\"ty"})
        );
    }
}
