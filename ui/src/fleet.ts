// The fleet view of the page (`robobrain serve --fleet`, the desktop app's
// fleet window): what the server says of the fleet folded into one state,
// and the requests the page sends. Pure: main.ts wires it to the DOM.

import type { ApprovalView, FleetBoard, FleetMessage, FleetRequest, Reply, ServerMessage } from "./protocol";
import { opWords } from "./protocol";

export interface FleetState {
  /** Whether the server shows a fleet (it said `fleet_hello`). */
  on: boolean;
  role: "operator" | "viewer";
  broker: string;
  board?: FleetBoard;
  /** The robot whose own view is shown, if any. */
  opened?: string;
  /** Commands sent and not yet answered: id → robot. */
  pending: Map<string, string>;
  notice?: string;
}

export function emptyFleet(): FleetState {
  return { on: false, role: "viewer", broker: "", pending: new Map() };
}

/** Whether a message is the fleet's (not a single run's). */
export function isFleetMessage(m: ServerMessage): m is FleetMessage {
  return m.type === "fleet_hello" || m.type === "fleet" || m.type === "robot" || m.type === "sent" || m.type === "reply";
}

/** What a robot's reply means to the operator, if it needs saying. */
export function replyNotice(robot: string, reply: Reply): string | undefined {
  switch (reply.status) {
    case "accepted":
    case "duplicate":
      return undefined;
    default:
      return `${robot} ${reply.status} a command${reply.code ? ` (${reply.code})` : ""}${reply.message ? `: ${reply.message}` : ""}`;
  }
}

/**
 * Folds a fleet message in. Returns the opened robot's own message (for the
 * single-robot view) when it is one, and whether the page must open its
 * robot again (a new connection: the server follows nothing yet).
 */
export function applyFleet(s: FleetState, m: FleetMessage): { robot?: ServerMessage; reopen?: string } {
  switch (m.type) {
    case "fleet_hello":
      s.on = true;
      s.role = m.role;
      s.broker = m.broker;
      return { reopen: s.opened };
    case "fleet": {
      const { type: _t, ...board } = m;
      s.board = board;
      return {};
    }
    case "robot":
      return m.robot === s.opened ? { robot: m.message } : {};
    case "sent":
      s.pending.set(m.id, m.robot);
      return {};
    case "reply": {
      if (m.reply.id) s.pending.delete(m.reply.id);
      const notice = replyNotice(m.robot, m.reply);
      if (notice) s.notice = notice;
      return {};
    }
  }
}

/** The request that opens a robot's own view (`undefined`: back to the board). */
export function openRequest(robot: string | undefined): FleetRequest {
  return robot ? { op: "open", robot } : { op: "close" };
}

/** An operator line (words, or a command as JSON) for one robot. */
export function sendRequest(robot: string, line: string): FleetRequest {
  return { op: "send", robot, line };
}

/** The approval `id` waiting on `robot` in the fleet's queue, if it still waits. */
export function queued(s: FleetState, robot: string, id: string): ApprovalView | undefined {
  return s.board?.approvals.find((a) => a.robot === robot && a.approval.approval_id === id)?.approval;
}

/** What an approval would do, in a few words: `navigate_to {"zone":"study"}`. */
export function what(a: ApprovalView): string {
  return opWords(a.op);
}

/** The header's line: `3/4 robots online · 1 approval waiting`. */
export function summary(board: FleetBoard | undefined): string {
  if (!board) return "waiting for the broker…";
  const online = board.robots.filter((r) => r.online).length;
  const n = board.approvals.length;
  return `${online}/${board.robots.length} robots online · ${n} approval${n === 1 ? "" : "s"} waiting${board.connected ? "" : " · broker link DOWN"}`;
}
