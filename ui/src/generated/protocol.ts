// Generated from robobrain's Rust wire types (src-wire/src/protocol/typescript.rs,
// ts-rs): do not edit. A test fails when this file and the Rust types differ;
// ROBOBRAIN_WRITE_TS=1 cargo test -p robobrain-wire --features ts typescript
// writes it again.

export type Activity = "IDLE" | "PATROLLING" | "RESPONDING" | "ALERT";

export type AlertStatus = "open" | "acknowledged";

export type ApprovalStatus = "requested" | "approved" | "edited" | "edit_refused" | "rejected";

export type ApprovalView = { 
/**
 * Approval id.
 */
approval_id: string, 
/**
 * Task it belongs to.
 */
task_id: string, 
/**
 * The op waiting for approval.
 */
op: Op, 
/**
 * Why approval is needed (policy rule).
 */
reason: string, 
/**
 * Risk level of the skill.
 */
risk: string, 
/**
 * Who asked for the task the op belongs to (absent for the robot's
 * own tasks: a charge, a patrol round, a resumed run's older tasks).
 */
requested_by?: Origin | null, };

export type BrainChoice = "rules" | "model" | "scripted";

export type BrainInfo = { 
/**
 * `model` (the rule brain standing in when it fails) or `rules`.
 */
kind: BrainChoice, 
/**
 * The decision model, with a model.
 */
model?: string | null, 
/**
 * Its endpoint (`…/v1`), with a model.
 */
endpoint?: string | null, };

export type BrainKind = "rule" | "model" | "fallback" | "scripted" | "kernel";

export type DecisionType = "CONTINUE" | "REPLAN" | "RETRY" | "SWITCH_TASK" | "ASK_HUMAN" | "FINISH" | "ABORT";

export type DecisionView = { 
/**
 * Iteration within the task.
 */
iteration: number, 
/**
 * Decision type.
 */
decision_type: DecisionType, 
/**
 * The brain's reason.
 */
reason: string, 
/**
 * Which brain decided.
 */
brain: BrainKind, };

export type Door = "console" | "headless" | "web" | "mcp" | "desktop" | "home_assistant" | "fleet" | "vda5050" | "scenario" | "command_line" | "voice";

export type Event = { 
/**
 * Sequence number within the run, from 1, no gaps.
 */
seq: number, 
/**
 * Sim seconds since start.
 */
time: number, 
/**
 * Wall clock, milliseconds since the Unix epoch.
 */
wall_ms: number, 
/**
 * The run's thread id.
 */
thread_id: string, 
/**
 * Monotonic step number when it happened.
 */
step: number, 
/**
 * The command this event answers, by where it came from: present on
 * every event the kernel emitted while taking a command in, absent on
 * what the robot, the brain or time did on their own.
 */
origin?: Origin | null, } & ({ "kind": "snapshot", 
/**
 * The state.
 */
snapshot: Snapshot, } | { "kind": "run", 
/**
 * The run.
 */
run: RunInfo, } | { "kind": "update", 
/**
 * Which node.
 */
node: Node, 
/**
 * Changed fields, by name.
 */
changed: JsonValue, } | { "kind": "intent", 
/**
 * What was said.
 */
utterance: string, 
/**
 * What it was taken to mean (`goto`, `patrol`, `stop`, `unknown`, …).
 */
intent: string, 
/**
 * Its arguments.
 */
args: JsonValue, 
/**
 * Whether the local rule parser handled it (no model).
 */
processed_locally: boolean, } | { "kind": "understanding", 
/**
 * What was said.
 */
utterance: string, 
/**
 * Who took it (a held answer that stood counts); `None`: nobody understood it.
 */
by?: Understander | null, 
/**
 * What it was read as (empty when nobody understood it).
 */
reading: Reading, 
/**
 * Every row asked, in order, with what it did and why.
 */
rows: Array<RowTrace>, } | { "kind": "decision", 
/**
 * Task it is about.
 */
task_id: string, 
/**
 * Iteration within the task, from 1.
 */
iteration: number, 
/**
 * Decision type.
 */
decision_type: DecisionType, 
/**
 * The brain's reason.
 */
reason: string, 
/**
 * Which brain.
 */
brain: BrainKind, 
/**
 * The ops it asked for.
 */
ops: Array<Op>, } | { "kind": "guardrail", 
/**
 * Task it is about.
 */
task_id: string, 
/**
 * The op.
 */
op: Op, 
/**
 * The verdict.
 */
verdict: Verdict, 
/**
 * Why.
 */
reason: string, } | { "kind": "mode", 
/**
 * Old mode.
 */
from: Mode, 
/**
 * New mode.
 */
to: Mode, 
/**
 * Why.
 */
reason: string, } | { "kind": "activity", 
/**
 * Old activity.
 */
from: Activity, 
/**
 * New activity.
 */
to: Activity, 
/**
 * Why.
 */
reason: string, } | { "kind": "task", 
/**
 * The task as it is now.
 */
task: TaskView, 
/**
 * Why it changed.
 */
reason: string, } | { "kind": "skill", 
/**
 * Goal id.
 */
goal_id: string, 
/**
 * Skill name.
 */
skill: string, 
/**
 * New status.
 */
status: SkillStatus, 
/**
 * Its arguments.
 */
args: JsonValue, 
/**
 * Progress, with `feedback`.
 */
feedback?: NavFeedback | null, 
/**
 * Error code, with `failed`.
 */
error?: string | null, 
/**
 * Detail.
 */
message?: string, 
/**
 * What the skill returned, with `succeeded` (left out when it returned nothing).
 */
output?: JsonValue | null, } | { "kind": "approval", 
/**
 * Approval id.
 */
approval_id: string, 
/**
 * Task it belongs to.
 */
task_id: string, 
/**
 * New status.
 */
status: ApprovalStatus, 
/**
 * The op (edited args when edited).
 */
op: Op, 
/**
 * Why (policy rule, operator's reason, or refusal).
 */
reason: string, 
/**
 * Who asked for the task the op belongs to, as on the approval
 * card (the envelope's `origin` is who approved or rejected).
 */
requested_by?: Origin | null, } | { "kind": "alert", 
/**
 * The incident.
 */
incident: IncidentRecord, } | { "kind": "speech", 
/**
 * The words.
 */
text: string, 
/**
 * Which track.
 */
track: SpeechTrack, 
/**
 * The WAV file the line is voiced into, when there is a voice.
 */
audio?: string | null, } | { "kind": "telemetry", 
/**
 * Pose.
 */
pose: Pose, 
/**
 * Battery percent.
 */
battery_pct: number, 
/**
 * Charging.
 */
charging: boolean, 
/**
 * Zone.
 */
zone: string | null, 
/**
 * Distance to the running base goal.
 */
distance_to_target: number | null, 
/**
 * Busy resources.
 */
busy: Array<string>, } | { "kind": "device", 
/**
 * The device's id.
 */
device: string, 
/**
 * Its room.
 */
room: string, 
/**
 * Its state now.
 */
state: JsonValue, 
/**
 * Whether it answers.
 */
online: boolean, 
/**
 * Why it changed (`devices.invoke p3.s1`, `fault`, `reported`).
 */
reason: string, } | { "kind": "fault", 
/**
 * The fault.
 */
fault: Fault, } | { "kind": "token", 
/**
 * What the call is for (`decide`, `repair`, `intent`, `summary`).
 */
purpose: string, 
/**
 * The new text (content, or a tool call's arguments).
 */
text: string, } | { "kind": "llm_call" } & LlmCallView | { "kind": "memory", 
/**
 * What was searched for (the operator's last utterance).
 */
query: string, 
/**
 * Retrieval mode (`bm25`, `dense`, `hybrid`).
 */
mode: string, 
/**
 * The memories used, best first.
 */
used: Array<MemoryUse>, 
/**
 * Estimated tokens of the memory section.
 */
tokens: number, 
/**
 * The section's token budget.
 */
budget: number, 
/**
 * Items (turns, memories, summaries) left out for the budget.
 */
dropped: number, } | { "kind": "log", 
/**
 * `info`, `warn` or `debug`.
 */
level: string, 
/**
 * The note.
 */
message: string, } | { "kind": "error", 
/**
 * A stable code (`invalid_command`, `inject_refused`, …).
 */
code: string, 
/**
 * What happened.
 */
message: string, });

export type Fault = { "fault": "block", 
/**
 * Passage name from the world file.
 */
passage: string, } | { "fault": "unblock", 
/**
 * Passage name from the world file.
 */
passage: string, } | { "fault": "set_battery", 
/**
 * Percent, 0–100.
 */
pct: number, } | { "fault": "stall" } | { "fault": "unstall" } | { "fault": "incident", 
/**
 * Zone name.
 */
zone: string, 
/**
 * What is there, e.g. `smoke`.
 */
kind: string, } | { "fault": "clear_incident", 
/**
 * Zone name.
 */
zone: string, } | { "fault": "camera_fail", 
/**
 * What is wrong, e.g. `lens covered`.
 */
reason: string, } | { "fault": "camera_restore" } | { "fault": "device_offline", 
/**
 * The device's id.
 */
device: string, } | { "fault": "device_online", 
/**
 * The device's id.
 */
device: string, };

export type FleetApproval = { 
/**
 * The robot it waits on.
 */
robot: string, 
/**
 * The approval.
 */
approval: ApprovalView, };

export type FleetBoard = { 
/**
 * Where the broker is (`mqtt://…`).
 */
broker: string, 
/**
 * Whether the link to the broker is up.
 */
connected: boolean, 
/**
 * Every robot heard of, by id.
 */
robots: Array<RobotRow>, 
/**
 * Every approval waiting across the fleet (online robots), robot by robot.
 */
approvals: Array<FleetApproval>, };

export type Hello = { 
/**
 * What this face may do.
 */
role: Role, 
/**
 * The run's thread.
 */
thread_id: string, 
/**
 * The map, to draw.
 */
map: MapView, 
/**
 * The whole world (zones and their names, routes, the robot's limits),
 * for a face that plans and checks as the console does.
 */
world: unknown, 
/**
 * The registry's skills, for the approval editor.
 */
skills: Array<SkillView>, 
/**
 * What the run is made of.
 */
run: RunInfo, };

export type Incident = { 
/**
 * Zone it is in.
 */
zone: string, 
/**
 * What it is (`smoke`, `fire`, `person`, …).
 */
kind: string, };

export type IncidentRecord = { 
/**
 * `i<n>`.
 */
id: string, 
/**
 * Sim time it was raised.
 */
time: number, 
/**
 * Where.
 */
zone: string, 
/**
 * What was seen (`smoke`, …).
 */
kinds: Array<string>, 
/**
 * The scene in a sentence.
 */
description: string, 
/**
 * The frame that shows it, by path (never inline).
 */
evidence: string | null, 
/**
 * The vision result behind it.
 */
vision: JsonValue, 
/**
 * `open`, or `acknowledged`.
 */
status: AlertStatus, 
/**
 * Who acknowledged it, once someone has.
 */
acknowledged_by: string | null, 
/**
 * When.
 */
acknowledged_at: number | null, };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type LinkState = "up" | "down";

export type LlmCallView = { 
/**
 * What it was for (`decide`, `repair`, `intent`, …).
 */
purpose: string, 
/**
 * The model.
 */
model: string, 
/**
 * `ok`, or the error's kind (`timeout`, `rate_limited`, `server_error`,
 * `refused`, `connection`, `stream_error`, `truncated`, `bad_reply`).
 */
outcome: string, 
/**
 * HTTP attempts made (1 + retries).
 */
attempts: number, 
/**
 * Wall milliseconds from request to the last byte.
 */
latency_ms: number, 
/**
 * Wall milliseconds to the first streamed token, when streamed.
 */
first_token_ms?: number | null, 
/**
 * Prompt tokens, as the endpoint reported them.
 */
prompt_tokens?: number | null, 
/**
 * Completion tokens, as the endpoint reported them.
 */
completion_tokens?: number | null, 
/**
 * How the reply was asked for (`tools`, `json_schema`, `json`).
 */
structured: string, 
/**
 * What went wrong, when something did.
 */
error?: string, };

export type MapView = { 
/**
 * World name.
 */
name: string, 
/**
 * Metres per cell.
 */
resolution: number, 
/**
 * Cells across.
 */
width: number, 
/**
 * Cells down.
 */
height: number, 
/**
 * One string per row of cells, north first: `#` wall, `.` floor.
 */
rows: Array<string>, 
/**
 * The zones.
 */
zones: Array<ZoneView>, 
/**
 * The passages faults can block.
 */
passages: Array<PassageView>, 
/**
 * Where the robot docks.
 */
dock: Pose, };

export type MemoryInfo = { 
/**
 * How it retrieves.
 */
mode: MemoryMode, 
/**
 * Why it runs as it does, when that is not what was asked for
 * (`no embedding model at …`).
 */
note?: string | null, };

export type MemoryMode = "off" | "bm25" | "dense" | "hybrid";

export type MemorySize = { 
/**
 * Searchable long-term memories (summaries, imported facts).
 */
memories: number, 
/**
 * Messages kept (every session's).
 */
messages: number, };

export type MemoryUse = { 
/**
 * The memory's id.
 */
id: number, 
/**
 * Its rank score.
 */
score: number, 
/**
 * Raw BM25, when it matched terms.
 */
bm25?: number | null, 
/**
 * Cosine with the query, when the model is there.
 */
dense?: number | null, 
/**
 * The memory's text (cut to 200 characters).
 */
text: string, 
/**
 * Why it was chosen, in words.
 */
why: string, };

export type Mode = "SAFE" | "CHARGE" | "EXEC" | "IDLE";

export type NavFeedback = { 
/**
 * Path length still to go, metres.
 */
distance_remaining: number, 
/**
 * Seconds to arrival at the current average speed.
 */
estimated_time_remaining: number, 
/**
 * Seconds since the goal started.
 */
navigation_time: number, 
/**
 * Local recoveries performed so far (waits for an obstruction to clear).
 */
number_of_recoveries: number, };

export type Node = "hci_ingress" | "telemetry_sync" | "world_update" | "mode_arbitrate" | "task_queue_update" | "kernel_route" | "build_observation" | "decide" | "compile_ops" | "guardrails" | "approval_interrupt" | "dispatch" | "observe_result" | "stop_or_loop";

export type Op = { "op": "dispatch", 
/**
 * Skill name from the registry.
 */
skill: string, 
/**
 * Arguments, checked against the skill's schema.
 */
args: JsonValue, } | { "op": "cancel", 
/**
 * The goal's id.
 */
goal_id: string, } | { "op": "wait", 
/**
 * Sim seconds.
 */
seconds: number, };

export type Origin = { 
/**
 * The door it came through.
 */
door: Door, 
/**
 * What the door lets it do: an `operator` acts, a `viewer` only
 * watches (its commands are refused, `watch_only`).
 */
role: Role, 
/**
 * What the door knows about the sender, in words: a connection's id
 * and peer (`ws#3 127.0.0.1:51234`), a topic (`topic
 * robobrain/r1/command`), a file. Empty when the door says it all
 * (the console on this terminal).
 */
detail?: string, };

export type Outcome = "took" | "passed" | "held" | "skipped";

export type PassageView = { 
/**
 * Name (`hall_door`).
 */
name: string, 
/**
 * Extent, metres.
 */
rect: Rect, };

export type Point = { 
/**
 * East, metres.
 */
x: number, 
/**
 * South, metres.
 */
y: number, };

export type Pose = { 
/**
 * East, metres.
 */
x: number, 
/**
 * South, metres.
 */
y: number, 
/**
 * Heading in radians, 0 = east, `pi/2` = south; kept in `(-pi, pi]`.
 */
theta: number, };

export type Priority = "background" | "main" | "user_interrupt" | "battery" | "safety";

export type Reading = { 
/**
 * The intent (`goto`, `HassTurnOn`, `home_control`, `device_call`, …).
 */
intent: string, 
/**
 * Its slots (names, areas, values; `{}` when it has none).
 */
slots: JsonValue, };

export type Rect = { 
/**
 * West edge.
 */
x0: number, 
/**
 * North edge.
 */
y0: number, 
/**
 * East edge.
 */
x1: number, 
/**
 * South edge.
 */
y1: number, };

export type Reply = { 
/**
 * The command's id (absent when none could be read).
 */
id?: string | null, 
/**
 * What became of it.
 */
status: ReplyStatus, 
/**
 * Why, for `refused` and `rejected`: a code (`malformed`, `too_large`, …).
 */
code?: string, 
/**
 * In words.
 */
message?: string, 
/**
 * The topic the message came on (for rejections).
 */
topic?: string, };

export type ReplyStatus = "accepted" | "duplicate" | "refused" | "rejected";

export type Risk = "read" | "low_write" | "high_write";

export type RobotRow = { 
/**
 * Its id.
 */
id: string, 
/**
 * `ONLINE`, `OFFLINE`, `CONNECTIONBROKEN`, or `?` (not heard yet).
 */
connection: string, 
/**
 * Whether it is online.
 */
online: boolean, 
/**
 * The kernel's mode (absent before its first snapshot).
 */
mode: Mode | null, 
/**
 * Whether its E-stop is latched.
 */
estop: boolean, 
/**
 * What it is doing.
 */
activity: Activity | null, 
/**
 * Its battery, in percent.
 */
battery_pct: number | null, 
/**
 * The zone it is in.
 */
zone: string | null, 
/**
 * Its current task: the first one not over (`title (status)`).
 */
task: string | null, 
/**
 * Alerts still open.
 */
alerts: number, 
/**
 * Approvals waiting on it.
 */
approvals: number, 
/**
 * Its world (map) name.
 */
world: string | null, };

export type RobotView = { 
/**
 * Pose (meaningless while `pose_unknown`).
 */
pose: Pose, 
/**
 * The robot has not said where it is yet (a real robot before its
 * first map pose): it is in no zone, and every motion asks.
 */
pose_unknown?: boolean, 
/**
 * Velocity.
 */
twist: Twist, 
/**
 * Battery, percent.
 */
battery_pct: number, 
/**
 * On the dock and charging.
 */
charging: boolean, 
/**
 * Zone it is in.
 */
zone: string | null, 
/**
 * Distance to the running base goal.
 */
distance_to_target: number | null, 
/**
 * Resources in use.
 */
busy: Array<string>, 
/**
 * The running base goal's planned path, start first (empty when idle).
 */
path?: Array<Point>, };

export type Role = "operator" | "viewer";

export type RowTrace = { 
/**
 * The understander.
 */
understander: Understander, 
/**
 * What it did.
 */
outcome: Outcome, 
/**
 * Why: what it matched, or why it passed.
 */
reason: string, };

export type RunInfo = { 
/**
 * Who decides.
 */
brain: BrainInfo, 
/**
 * What the run remembers with.
 */
memory: MemoryInfo, 
/**
 * The configured MCP services, in config order.
 */
services: Array<ServiceInfo>, 
/**
 * The robot: `sim:` (in process) or `tcp://HOST:PORT`.
 */
robot: string, 
/**
 * The thread database, when the run is recorded.
 */
db?: string | null, };

export type RunningSkillView = { 
/**
 * Goal id.
 */
goal_id: string, 
/**
 * Skill name.
 */
skill: string, 
/**
 * Its arguments.
 */
args: JsonValue, 
/**
 * Sim time it started.
 */
started_at: number, 
/**
 * Sim time it times out.
 */
deadline: number, 
/**
 * Resources it holds.
 */
resources: Array<string>, 
/**
 * Latest feedback.
 */
feedback: NavFeedback | null, };

export type ServerMessage = { "type": "hello" } & Hello | { "type": "snapshot", 
/**
 * The state; its `seq` is the last event it covers.
 */
snapshot: Snapshot, } | { "type": "event", 
/**
 * The event.
 */
event: Event, 
/**
 * The event in words, as every face says it
 * (`describe::text`): a face shows this, never words events itself.
 */
text?: string, } | { "type": "refused", 
/**
 * Why.
 */
reason: string, } | { "type": "error", 
/**
 * `invalid_command`, `line_too_long`, `utterance_too_long`,
 * `invalid_utf8`, `not_sent`; on a fleet page also
 * `invalid_request`, `unknown_robot`, `not_heard`.
 */
code: string, 
/**
 * What was wrong and what was expected.
 */
message: string, } | { "type": "closed", 
/**
 * Why.
 */
reason: string, } | { "type": "fleet_hello", 
/**
 * What this page may do.
 */
role: Role, 
/**
 * Where the broker is.
 */
broker: string, } | { "type": "fleet" } & FleetBoard | { "type": "robot", 
/**
 * The robot.
 */
robot: string, 
/**
 * The frame.
 */
message: ServerMessage, } | { "type": "sent", 
/**
 * The robot.
 */
robot: string, 
/**
 * The command's id (the robot's reply carries it).
 */
id: string, } | { "type": "reply", 
/**
 * The robot.
 */
robot: string, 
/**
 * The answer.
 */
reply: Reply, };

export type ServiceInfo = { 
/**
 * Its name: its tools are skills `mcp.<name>.<tool>`.
 */
name: string, 
/**
 * Tools registered as skills.
 */
tools: number, 
/**
 * Why it could not start (it is left out), when it could not.
 */
error?: string | null, };

export type SkillStatus = "dispatched" | "feedback" | "succeeded" | "failed" | "cancelled";

export type SkillView = { 
/**
 * Its name (`navigate_to`, `mcp.time.get_current_time`).
 */
name: string, 
/**
 * What it does.
 */
description: string, 
/**
 * Its arguments' JSON Schema.
 */
args_schema: JsonValue, 
/**
 * Its risk.
 */
risk: Risk, };

export type Snapshot = { 
/**
 * Thread id of this run.
 */
thread_id: string, 
/**
 * Sim seconds since start.
 */
time: number, 
/**
 * Monotonic step number.
 */
step: number, 
/**
 * Sequence number of the last event emitted before this snapshot: a
 * face that takes it applies only events with a higher `seq`.
 */
seq: number, 
/**
 * Kernel mode.
 */
mode: Mode, 
/**
 * Activity.
 */
activity: Activity, 
/**
 * Whether an E-stop is latched.
 */
estop: boolean, 
/**
 * The robot.
 */
robot: RobotView, 
/**
 * Every task not yet forgotten, queue order (active first).
 */
tasks: Array<TaskView>, 
/**
 * Running skill goals.
 */
running: Array<RunningSkillView>, 
/**
 * Approvals waiting for the operator.
 */
approvals: Array<ApprovalView>, 
/**
 * The last decision.
 */
last_decision: DecisionView | null, 
/**
 * The last failure, in words.
 */
last_failure: string | null, 
/**
 * Passages blocked.
 */
blocked_passages: Array<string>, 
/**
 * Incidents in view.
 */
incidents: Array<Incident>, 
/**
 * Alerts raised and not yet acknowledged.
 */
alerts: Array<IncidentRecord>, 
/**
 * The newest frame `watch` kept (a PNG's path: an alert's evidence or
 * the last ordinary look), when `[skills] keep_frames` is on.
 */
last_frame?: string | null, 
/**
 * The brain in use (`rule`, `model`, …).
 */
brain: BrainKind | null, 
/**
 * World name.
 */
world: string, 
/**
 * What the run is made of, once assembled (absent in scripted runs).
 */
run?: RunInfo | null, 
/**
 * Smart-home devices: id → `{state, online, room}` (absent without devices).
 */
devices?: JsonValue, 
/**
 * The robot link: `up`, or `down` (then the kernel is in SAFE); left
 * out while up.
 */
link?: LinkState, 
/**
 * How much the run remembers, as of the memory thread's last report
 * (absent without memory).
 */
memory?: MemorySize | null, };

export type SpeechTrack = "template" | "summary" | "answer";

export type TaskStatus = "queued" | "running" | "preempted" | "paused" | "waiting_human" | "succeeded" | "aborted" | "cancelled";

export type TaskView = { 
/**
 * Task id (`t1`, `t2`, …).
 */
id: string, 
/**
 * What it is, in words (`go to kitchen`, `patrol: kitchen → bedroom`).
 */
title: string, 
/**
 * Its kind (`goto`, `patrol`, `charge`).
 */
kind: string, 
/**
 * Its priority.
 */
priority: Priority, 
/**
 * Its status.
 */
status: TaskStatus, 
/**
 * Plan step it is on, from 0.
 */
step: number, 
/**
 * Steps in its plan.
 */
steps: number, 
/**
 * Sim time it must finish by, if any.
 */
deadline: number | null, };

export type Twist = { 
/**
 * Forward speed, m/s.
 */
linear: number, 
/**
 * Turn rate, rad/s (positive turns from east toward south).
 */
angular: number, };

export type Understander = "robot_grammar" | "answer" | "home_grammar" | "home_rules" | "device_parser" | "robot_rules" | "semantic" | "model";

export type Verdict = "allowed" | "needs_approval" | "rejected";

export type ZoneView = { 
/**
 * Canonical name.
 */
name: string, 
/**
 * Extent, metres.
 */
rect: Rect, 
/**
 * Where a `navigate_to` it ends.
 */
goal: Point, 
/**
 * Entering needs approval.
 */
restricted: boolean, 
/**
 * Outside the apartment.
 */
outside: boolean, };
