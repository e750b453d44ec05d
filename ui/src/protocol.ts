// The wire form of robobrain's protocol as the page sees it (docs/protocol.md,
// docs/web.md). The types are the Rust ones, generated into
// ./generated/protocol.ts (ts-rs; a Rust test keeps that file in step with
// src-wire), so the page compiles against what the server really sends;
// here are only the page's own names and helpers on top of them.

import type { Event, FleetBoard, ServerMessage } from "./generated/protocol";

export type {
  ApprovalView,
  FleetApproval,
  FleetBoard,
  Hello,
  Incident,
  IncidentRecord,
  MapView,
  MemoryUse,
  Op,
  Origin,
  Point,
  Pose,
  Rect,
  Reply,
  RobotRow,
  RunInfo,
  ServerMessage,
  SkillView,
  Snapshot,
  TaskView,
} from "./generated/protocol";
import type { JsonValue, Op, Origin, RunInfo } from "./generated/protocol";

/** A skill as the approval editor needs it (`SkillView`). */
export type { SkillView as SkillSpecView } from "./generated/protocol";

/** One smart-home device as the page knows it (snapshot `devices`, `device` events). */
export interface DeviceView { state?: Record<string, unknown>; online?: boolean; room?: string; reason?: string }
/**
 * An event as the page handles it: the envelope and the kind, and the
 * kind's own fields read by name (the page shows what it gets; the precise
 * union is the generated `Event`).
 */
export type RbEvent = Pick<Event, "seq" | "time" | "wall_ms" | "thread_id" | "step" | "origin"> & {
  kind: Event["kind"];
  [field: string]: unknown;
};

/** The frames only a fleet page gets. */
export type FleetMessage = Extract<ServerMessage, { type: "fleet_hello" | "fleet" | "robot" | "sent" | "reply" }>;

/** The board, as the `fleet` frame carries it. */
export type FleetFrame = { type: "fleet" } & FleetBoard;

/** An origin in words, as the core says it: `console`, `web: ws#3 127.0.0.1:51234`, `web viewer: ws#4 …`. */
export function originWords(o: Origin): string {
  return `${o.door}${o.role === "viewer" ? " viewer" : ""}${o.detail ? `: ${o.detail}` : ""}`;
}
/** Who asked for an approval's step, as its card says it. */
export function askedBy(a: { requested_by?: Origin | null }): string {
  return a.requested_by ? `asked by ${originWords(a.requested_by)}` : "asked by no one: the robot's own task";
}
/** The skill an op dispatches (none for a cancel or a wait). */
export function opSkill(op: Op): string | undefined {
  return op.op === "dispatch" ? op.skill : undefined;
}
/** The arguments an op dispatches with (none for a cancel or a wait). */
export function opArgs(op: Op): JsonValue | undefined {
  return op.op === "dispatch" ? op.args : undefined;
}
/** What an op does, in a few words: `navigate_to {"zone":"study"}`, `wait 5s`, `cancel g1.0`. */
export function opWords(op: Op): string {
  switch (op.op) {
    case "dispatch":
      return `${op.skill} ${JSON.stringify(op.args)}`;
    case "wait":
      return `wait ${op.seconds}s`;
    case "cancel":
      return `cancel ${op.goal_id}`;
  }
}
/** The one line every face shows: `brain model qwen-max · memory hybrid · mcp time(2)` (as `RunInfo::summary`). */
export function runSummary(run: RunInfo): string {
  const brain = run.brain.kind === "model" && run.brain.model ? `model ${run.brain.model}` : run.brain.kind;
  const services = run.services.length ? run.services.map((s) => `${s.name}(${s.error ? "failed" : s.tools})`).join(", ") : "none";
  return `brain ${brain} · memory ${run.memory.mode} · mcp ${services}`;
}

/** What a fleet page asks for (one JSON text frame each). */
export type FleetRequest =
  | { op: "open"; robot: string }
  | { op: "close" }
  | { op: "send"; robot: string; line: string }
  | { op: "estop_all" };
