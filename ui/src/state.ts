// The page's state, built only from what the server sends: a pure reducer,
// so a live run and a replayed log paint the same way.

import type { JsonValue, NavFeedback, Reading, RowTrace } from "./generated/protocol";
import type { ApprovalView, DeviceView, IncidentRecord, MemoryUse, MapView, Origin, Point, RbEvent, RunInfo, ServerMessage, SkillSpecView, Snapshot, TaskView } from "./protocol";
import { originWords } from "./protocol";

export interface DecisionEntry { seq: number; time: number; type: string; reason: string; brain: string; task: string; ops: string }
export interface LineEntry { seq: number; time: number; text: string; extra?: string }
/** A log line; `origin` says where the command it answers came from, in words. */
export interface LogEntry { seq: number; time: number; kind: string; text: string; origin?: string }

export interface ViewState {
  role: "operator" | "viewer" | "replay";
  thread: string;
  map?: MapView;
  skills: Map<string, SkillSpecView>;
  snap?: Snapshot;
  /** What the run is made of: from `hello`, snapshots and `run` events. */
  run?: RunInfo;
  seq: number;
  battery: { time: number; pct: number }[];
  trail: Point[];
  decisions: DecisionEntry[];
  tokens: { purpose: string; text: string };
  speech: LineEntry[];
  approvals: Map<string, ApprovalView>;
  tasks: Map<string, TaskView>;
  alerts: Map<string, IncidentRecord>;
  devices: Map<string, DeviceView>;
  memory: LineEntry[];
  log: LogEntry[];
  notice?: string;
}

/** Most entries any list keeps. */
export const KEEP = 500;
/** Most log lines kept. */
export const KEEP_LOG = 2000;

export function empty(): ViewState {
  return {
    role: "viewer",
    thread: "",
    skills: new Map(),
    seq: 0,
    battery: [],
    trail: [],
    decisions: [],
    tokens: { purpose: "", text: "" },
    speech: [],
    approvals: new Map(),
    tasks: new Map(),
    alerts: new Map(),
    devices: new Map(),
    memory: [],
    log: [],
  };
}

function push<T>(list: T[], item: T, keep: number): void {
  list.push(item);
  if (list.length > keep) list.splice(0, list.length - keep);
}

function str(v: unknown): string {
  return typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v);
}

/**
 * An event's own fields, compact, for an event that came without words: the
 * page never words events itself — a server's `event` frame carries them
 * (`text`, from the one Rust describer every face uses); only a log file
 * replayed in the page has none, and shows what was recorded.
 */
export function raw(e: RbEvent): string {
  const { seq: _s, time: _t, wall_ms: _w, thread_id: _th, step: _st, kind: _k, origin: _o, ...rest } = e;
  return JSON.stringify(rest).slice(0, 200);
}

function takeSnapshot(s: ViewState, snap: Snapshot): void {
  s.snap = snap;
  if (snap.run) s.run = snap.run;
  s.thread = snap.thread_id;
  if (snap.seq !== undefined) s.seq = Math.max(s.seq, snap.seq);
  s.approvals = new Map(snap.approvals.map((a) => [a.approval_id, a]));
  s.tasks = new Map(snap.tasks.map((t) => [t.id, t]));
  for (const a of snap.alerts ?? []) s.alerts.set(a.id, a);
  for (const [id, d] of Object.entries(snap.devices ?? {})) s.devices.set(id, { ...(s.devices.get(id) ?? {}), ...d });
  push(s.battery, { time: snap.time, pct: snap.robot.battery_pct }, KEEP);
}

function applyEvent(s: ViewState, e: RbEvent, text?: string): void {
  if (e.seq <= s.seq && e.kind !== "snapshot") return;
  s.seq = Math.max(s.seq, e.seq);
  if (e.kind !== "token" && e.kind !== "telemetry") {
    const entry: LogEntry = { seq: e.seq, time: e.time, kind: e.kind, text: text ?? raw(e) };
    if (e.origin) entry.origin = originWords(e.origin);
    push(s.log, entry, KEEP_LOG);
  }
  const snap = s.snap;
  if (snap) snap.time = e.time;
  switch (e.kind) {
    case "snapshot":
      takeSnapshot(s, e.snapshot as Snapshot);
      break;
    case "run":
      s.run = e.run as RunInfo;
      break;
    case "telemetry":
      if (snap) {
        snap.robot.pose = e.pose as Snapshot["robot"]["pose"];
        snap.robot.battery_pct = e.battery_pct as number;
        snap.robot.charging = e.charging as boolean;
        snap.robot.zone = (e.zone as string | null) ?? null;
        snap.robot.distance_to_target = (e.distance_to_target as number | null) ?? null;
        snap.robot.busy = (e.busy as string[]) ?? [];
      }
      push(s.battery, { time: e.time, pct: e.battery_pct as number }, KEEP);
      {
        const p = e.pose as Point;
        const last = s.trail[s.trail.length - 1];
        if (!last || Math.hypot(last.x - p.x, last.y - p.y) > 0.05) push(s.trail, { x: p.x, y: p.y }, 4 * KEEP);
      }
      break;
    case "mode":
      if (snap) snap.mode = e.to as Snapshot["mode"];
      break;
    case "activity":
      if (snap) snap.activity = e.to as Snapshot["activity"];
      break;
    case "task": {
      const t = e.task as TaskView;
      s.tasks.set(t.id, t);
      break;
    }
    case "decision":
      push(s.decisions, {
        seq: e.seq,
        time: e.time,
        type: e.decision_type as string,
        reason: e.reason as string,
        brain: e.brain as string,
        task: e.task_id as string,
        ops: ((e.ops as { op: string; skill?: string }[]) ?? []).map((o) => (o.skill ? `${o.op} ${o.skill}` : o.op)).join(", "),
      }, KEEP);
      s.tokens = { purpose: "", text: "" };
      break;
    case "understanding": {
      // The language pipeline's trace, on the same timeline as decisions:
      // who took the utterance, as what, and why each earlier one passed.
      const rows = (e.rows as RowTrace[] | undefined) ?? [];
      const passed = rows.filter((r) => r.outcome !== "took").map((r) => `${r.understander} ${r.outcome}: ${r.reason}`);
      const reading = e.reading as Reading | undefined;
      push(s.decisions, {
        seq: e.seq,
        time: e.time,
        type: "understood",
        reason: `“${str(e.utterance)}”${passed.length ? ` — ${passed.join("; ")}` : ""}`,
        brain: (e.by as string | undefined) ?? "nobody",
        task: "",
        ops: reading?.intent ?? "",
      }, KEEP);
      break;
    }
    case "token":
      if (s.tokens.purpose !== e.purpose) s.tokens = { purpose: e.purpose as string, text: "" };
      s.tokens.text = (s.tokens.text + (e.text as string)).slice(-4000);
      break;
    case "speech":
      push(s.speech, { seq: e.seq, time: e.time, text: e.text as string, extra: e.track as string }, KEEP);
      break;
    case "approval": {
      const id = e.approval_id as string;
      if (e.status === "requested") {
        const a: ApprovalView = { approval_id: id, task_id: e.task_id as string, op: e.op as ApprovalView["op"], reason: e.reason as string, risk: (e.risk as string | undefined) ?? "" };
        if (e.requested_by) a.requested_by = e.requested_by as Origin;
        s.approvals.set(id, a);
      } else {
        s.approvals.delete(id);
      }
      break;
    }
    case "alert": {
      const i = e.incident as IncidentRecord;
      s.alerts.set(i.id, i);
      break;
    }
    case "device": {
      const id = str(e.device);
      if (id) {
        const known = s.devices.get(id) ?? {};
        s.devices.set(id, {
          ...known,
          state: (e.state as Record<string, unknown> | undefined) ?? known.state,
          online: (e.online as boolean | undefined) ?? known.online,
          room: (e.room as string | undefined) ?? known.room,
          reason: e.reason as string | undefined,
        });
      }
      break;
    }
    case "memory": {
      const used = (e.used as MemoryUse[] | undefined) ?? [];
      const lines = used.map((u) => `#${u.id} ${u.score.toFixed(2)}${u.bm25 !== undefined && u.bm25 !== null ? ` bm25 ${u.bm25.toFixed(2)}` : ""}${u.dense !== undefined && u.dense !== null ? ` cos ${u.dense.toFixed(2)}` : ""}: ${u.text} — ${u.why}`);
      push(s.memory, { seq: e.seq, time: e.time, text: text ?? raw(e), extra: lines.join("\n") }, KEEP);
      break;
    }
    case "skill":
      if (snap) {
        const goal = e.goal_id as string;
        const before = snap.running.find((r) => r.goal_id === goal);
        snap.running = snap.running.filter((r) => r.goal_id !== goal);
        if (e.status === "dispatched" || e.status === "feedback") {
          // What the event does not say is kept from the snapshot's entry.
          snap.running.push({
            goal_id: goal,
            skill: e.skill as string,
            args: (e.args as JsonValue | undefined) ?? before?.args ?? null,
            started_at: before?.started_at ?? e.time,
            deadline: before?.deadline ?? 0,
            resources: before?.resources ?? [],
            feedback: (e.feedback as NavFeedback | undefined) ?? before?.feedback ?? null,
          });
        }
      }
      break;
    default:
      break;
  }
}

/** Applies one message from the server. */
export function apply(s: ViewState, m: ServerMessage): ViewState {
  switch (m.type) {
    case "hello":
      s.role = m.role;
      s.thread = m.thread_id;
      s.map = m.map;
      s.skills = new Map((m.skills ?? []).map((k) => [k.name, k]));
      if (m.run) s.run = m.run;
      break;
    case "snapshot":
      takeSnapshot(s, m.snapshot);
      if (m.snapshot.seq !== undefined) s.seq = m.snapshot.seq;
      break;
    case "event":
      applyEvent(s, m.event, m.text);
      break;
    case "refused":
      s.notice = `refused: ${m.reason}`;
      break;
    case "error":
      s.notice = `error: ${m.message}`;
      break;
    case "closed":
      s.notice = m.reason;
      break;
  }
  return s;
}

/** Events of a JSONL run log, in order; a bad line names its number. */
export function parseLog(text: string): RbEvent[] {
  const out: RbEvent[] = [];
  text.split("\n").forEach((line, i) => {
    const t = line.trim();
    if (!t) return;
    let v: unknown;
    try {
      v = JSON.parse(t);
    } catch (err) {
      throw new Error(`line ${i + 1}: not JSON (${(err as Error).message})`);
    }
    const e = v as RbEvent;
    if (typeof e.seq !== "number" || typeof e.kind !== "string") throw new Error(`line ${i + 1}: not an event (expected "seq" and "kind")`);
    out.push(e);
  });
  return out;
}

/** The state after the first `n` events of a log (replay). */
export function replay(map: MapView | undefined, events: RbEvent[], n: number): ViewState {
  const s = empty();
  s.role = "replay";
  s.map = map;
  for (const e of events.slice(0, n)) applyEvent(s, e);
  return s;
}
