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
export interface ApprovalView { approval_id: string; task_id: string; op: Op; reason: string; risk?: string }
/** One smart-home device as the page knows it (snapshot `devices`, `device` events). */
export interface DeviceView { state?: Record<string, unknown>; online?: boolean; room?: string; reason?: string }
/** One memory a model decision was given (`memory` events): its scores and why. */
export interface MemoryUse { id: number; score: number; bm25?: number; dense?: number; text: string; why: string }
export interface Incident { zone: string; kind: string }
export interface IncidentRecord { id: string; time: number; zone: string; kinds: string[]; description: string; status: string; acknowledged_by?: string | null }

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
  /** Smart-home devices: id → {state, online, room}. */
  devices?: Record<string, DeviceView>;
  brain?: string | null;
  world: string;
}

/** An event: the common fields and the kind's own. */
export interface RbEvent {
  seq: number;
  time: number;
  wall_ms: number;
  thread_id: string;
  step: number;
  kind: string;
  [field: string]: unknown;
}

export interface SkillSpecView { name: string; description: string; args_schema: unknown; risk: string }

/** What the server (or the desktop app) sends. */
export type ServerMessage =
  | { type: "hello"; role: "operator" | "viewer"; thread_id: string; map: MapView; skills?: SkillSpecView[] }
  | { type: "snapshot"; snapshot: Snapshot }
  | { type: "event"; event: RbEvent }
  | { type: "refused"; reason: string }
  | { type: "error"; message: string }
  | { type: "closed"; reason: string };
