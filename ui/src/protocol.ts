// The wire form of robobrain's protocol as the page sees it (docs/protocol.md,
// docs/web.md). Loosely typed where the page only shows what it gets.

export interface Point { x: number; y: number }
export interface Pose extends Point { theta: number }
export interface Rect { x0: number; y0: number; x1: number; y1: number }

export interface MapView {
  name: string;
  resolution: number;
  width: number;
  height: number;
  rows: string[];
  zones: { name: string; rect: Rect; goal: Point; restricted: boolean; outside: boolean }[];
  passages: { name: string; rect: Rect }[];
  dock: Pose;
}

export interface Op { op: "dispatch" | "cancel" | "wait"; skill?: string; args?: unknown; goal_id?: string; seconds?: number }
export interface TaskView { id: string; title: string; kind: string; priority: string; status: string; step: number; steps: number }
/** Where a command came from, stamped by its door (`Origin` in src-wire/src/protocol/origin.rs; docs/protocol.md). */
export interface Origin { door: string; role: "operator" | "viewer"; detail?: string }
/** An origin in words, as the core says it: `console`, `web: ws#3 127.0.0.1:51234`, `web viewer: ws#4 …`. */
export function originWords(o: Origin): string {
  return `${o.door}${o.role === "viewer" ? " viewer" : ""}${o.detail ? `: ${o.detail}` : ""}`;
}
/** Who asked for an approval's step, as its card says it. */
export function askedBy(a: { requested_by?: Origin }): string {
  return a.requested_by ? `asked by ${originWords(a.requested_by)}` : "asked by no one: the robot's own task";
}
export interface ApprovalView { approval_id: string; task_id: string; op: Op; reason: string; risk?: string; /** Who asked for the task (absent for the robot's own). */ requested_by?: Origin }
/** One smart-home device as the page knows it (snapshot `devices`, `device` events). */
export interface DeviceView { state?: Record<string, unknown>; online?: boolean; room?: string; reason?: string }
/** One memory a model decision was given (`memory` events): its scores and why. */
export interface MemoryUse { id: number; score: number; bm25?: number; dense?: number; text: string; why: string }
export interface Incident { zone: string; kind: string }
export interface IncidentRecord { id: string; time: number; zone: string; kinds: string[]; description: string; status: string; acknowledged_by?: string | null }

/** What a run is made of (`RunInfo` in src-wire/src/protocol/run.rs): every face shows it the same way. */
export interface RunInfo {
  brain: { kind: "rules" | "model" | "scripted"; model?: string; endpoint?: string };
  memory: { mode: "off" | "bm25" | "dense" | "hybrid"; note?: string };
  services: { name: string; tools: number; error?: string }[];
  robot: string;
  db?: string;
}

/** The one line every face shows: `brain model qwen-max · memory hybrid · mcp time(2)` (as `RunInfo::summary`). */
export function runSummary(run: RunInfo): string {
  const brain = run.brain.kind === "model" && run.brain.model ? `model ${run.brain.model}` : run.brain.kind;
  const services = run.services.length ? run.services.map((s) => `${s.name}(${s.error ? "failed" : s.tools})`).join(", ") : "none";
  return `brain ${brain} · memory ${run.memory.mode} · mcp ${services}`;
}

export interface Snapshot {
  thread_id: string;
  time: number;
  step: number;
  seq?: number;
  mode: string;
  activity: string;
  estop: boolean;
  robot: {
    pose: Pose;
    battery_pct: number;
    charging: boolean;
    zone: string | null;
    distance_to_target: number | null;
    busy: string[];
    path?: Point[];
  };
  tasks: TaskView[];
  running: { goal_id: string; skill: string; args: unknown; started_at: number }[];
  approvals: ApprovalView[];
  last_decision?: unknown;
  last_failure: string | null;
  blocked_passages: string[];
  incidents: Incident[];
  alerts?: IncidentRecord[];
  /** The newest frame `watch` kept (a PNG's path), when frames are kept. */
  last_frame?: string;
  /** Smart-home devices: id → {state, online, room}. */
  devices?: Record<string, DeviceView>;
  brain?: string | null;
  world: string;
  /** What the run is made of (absent in scripted runs). */
  run?: RunInfo;
}

/** An event: the common fields and the kind's own. */
export interface RbEvent {
  seq: number;
  time: number;
  wall_ms: number;
  thread_id: string;
  step: number;
  /** The command this event answers, by where it came from (absent when no command caused it). */
  origin?: Origin;
  kind: string;
  [field: string]: unknown;
}

export interface SkillSpecView { name: string; description: string; args_schema: unknown; risk: string }

// The fleet (`robobrain serve --fleet`, the desktop app's fleet window;
// `fleet::board` in src-fleet/src/fleet/board.rs, docs/web.md).

/** One robot's row on the fleet's board. */
export interface RobotRow {
  id: string;
  connection: "ONLINE" | "OFFLINE" | "CONNECTIONBROKEN" | "?";
  online: boolean;
  mode: string | null;
  estop: boolean;
  activity: string | null;
  battery_pct: number | null;
  zone: string | null;
  task: string | null;
  alerts: number;
  approvals: number;
  world: string | null;
}

/** An approval waiting somewhere in the fleet. */
export interface FleetApproval { robot: string; approval: ApprovalView }

/** The whole fleet: every robot, one approval queue. */
export interface FleetBoard { broker: string; connected: boolean; robots: RobotRow[]; approvals: FleetApproval[] }

/** A robot's answer to a command (docs/fleet.md). */
export interface Reply { id?: string; status: "accepted" | "duplicate" | "refused" | "rejected"; code?: string; message?: string; topic?: string }

/**
 * What a server sends — a run's (`robobrain serve`) or a fleet's
 * (`serve --fleet`) — or the desktop app: one frame type, tagged by `type`
 * (`ServerMessage` in src-wire/src/protocol/frame.rs).
 */
export type ServerMessage =
  | { type: "hello"; role: "operator" | "viewer"; thread_id: string; map: MapView; skills?: SkillSpecView[]; run?: RunInfo }
  | { type: "snapshot"; snapshot: Snapshot }
  /** `text`: the event in words, as every face says it (`describe::text` in Rust). */
  | { type: "event"; event: RbEvent; text?: string }
  | { type: "refused"; reason: string }
  | { type: "error"; code?: string; message: string }
  | { type: "closed"; reason: string }
  | { type: "fleet_hello"; role: "operator" | "viewer"; broker: string }
  | ({ type: "fleet" } & FleetBoard)
  | { type: "robot"; robot: string; message: ServerMessage }
  | { type: "sent"; robot: string; id: string }
  | { type: "reply"; robot: string; reply: Reply };

/** The frames only a fleet page gets. */
export type FleetMessage = Extract<ServerMessage, { type: "fleet_hello" | "fleet" | "robot" | "sent" | "reply" }>;

/** What a fleet page asks for (one JSON text frame each). */
export type FleetRequest =
  | { op: "open"; robot: string }
  | { op: "close" }
  | { op: "send"; robot: string; line: string }
  | { op: "estop_all" };
