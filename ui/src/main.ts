// The page: connects, keeps the state, paints at most once a frame, and
// turns clicks and typing into operator lines.

import { DEFAULT_REJECT_REASON, GUARD_MS, parseChat, refusal } from "./approval";
import { applyFleet, emptyFleet, isFleetMessage, openRequest, queued as inQueue, sendRequest } from "./fleet";
import { drawMap, drawSparkline } from "./map";
import type { ApprovalView, FleetRequest, RbEvent, ServerMessage } from "./protocol";
import { askedBy, opArgs, opSkill } from "./protocol";
import { validate } from "./schema";
import { apply, empty, parseLog, replay, type ViewState } from "./state";
import { connect, type Transport } from "./transport";
import { renderFleet, renderPanels, type LogFilter } from "./view";

const LOG_KINDS = ["decision", "task", "skill", "approval", "speech", "alert", "mode", "activity", "guardrail", "intent", "understanding", "log", "error", "llm_call", "fault", "update", "snapshot", "device", "memory"];

let live: ViewState = empty();
let shown: ViewState = live;
let replayEvents: RbEvent[] | undefined;
/** The fleet, when the server shows one (`serve --fleet`). */
const fleet = emptyFleet();
const filter: LogFilter = { hidden: new Set(["update"]), text: "" };
/** Wall-clock ms from an event leaving the core to its paint (the last 5000). */
const latencies: number[] = [];
let unpainted: number[] = [];
let queued = false;

const el = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function paint(): void {
  queued = false;
  closeIfAnswered();
  if (fleet.on) {
    document.body.classList.toggle("fleet-board", !fleet.opened);
    el("fleet-bar").hidden = false;
    el("fleet").hidden = fleet.opened !== undefined;
    el("fleet-back").hidden = fleet.opened === undefined;
    renderFleet(fleet);
    if (fleet.notice) {
      live.notice = fleet.notice;
      fleet.notice = undefined;
    }
  }
  renderPanels(shown, filter);
  drawMap(el<HTMLCanvasElement>("map"), shown);
  drawSparkline(el<HTMLCanvasElement>("sparkline"), shown.battery);
  el("seq").textContent = String(shown.seq);
  const now = Date.now();
  for (const sent of unpainted) {
    latencies.push(now - sent);
    if (latencies.length > 5000) latencies.shift();
  }
  unpainted = [];
}

function schedule(): void {
  if (!queued) {
    queued = true;
    requestAnimationFrame(paint);
  }
}

function onMessage(m: ServerMessage): void {
  if (!isFleetMessage(m)) return onRun(m);
  const { robot, reopen } = applyFleet(fleet, m);
  // A new connection follows no robot yet: open the one shown again.
  if (reopen) request(openRequest(reopen));
  if (robot) onRun(robot);
  schedule();
}

/** A message of the run shown: the server's own, or the opened robot's. */
function onRun(m: ServerMessage): void {
  // Another run (the server restarted): start afresh.
  if (m.type === "hello" && live.thread && live.thread !== m.thread_id) live = empty();
  apply(live, m);
  if (m.type === "event") unpainted.push(m.event.wall_ms);
  if (!replayEvents) shown = live;
  schedule();
}

const transport: Transport = connect({
  message: onMessage,
  status(connected, detail) {
    el("conn").textContent = connected ? `connected · ${detail}` : detail;
    el("conn").className = connected ? "conn up" : "conn down";
  },
  lastSeq: () => live.seq,
  thread: () => live.thread,
});

function request(r: FleetRequest): void {
  transport.send(JSON.stringify(r));
}

/** Sends an operator line (or a command) to `robot` over the fleet. */
function sendTo(robot: string, command: unknown): void {
  request(sendRequest(robot, typeof command === "string" ? command : JSON.stringify(command)));
}

/** Sends an operator line (or a command) to the run shown: the server's, or the opened robot. */
function send(command: unknown): void {
  if (!fleet.on) return transport.send(typeof command === "string" ? command : JSON.stringify(command));
  if (!fleet.opened) {
    live.notice = "open a robot first: click its row";
    schedule();
    return;
  }
  sendTo(fleet.opened, command);
}

/** Shows `robot`'s own view (or, with none, the board again). */
function open(robot: string | undefined): void {
  fleet.opened = robot;
  closeDialog();
  live = empty();
  shown = live;
  request(openRequest(robot));
  schedule();
}

// Chat: words are said; `{…}` is a command; `/approve ID`, `/reject ID …`
// and `/edit ID JSON` answer an approval (the id must be waiting). Enter
// here never answers anything else.
el<HTMLFormElement>("chat").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = el<HTMLInputElement>("say");
  const line = parseChat(input.value);
  switch (line.kind) {
    case "nothing":
      return;
    case "error":
      live.notice = line.message;
      schedule();
      return; // the line stays to fix
    case "answer":
      if (!live.approvals.has(line.approvalId)) {
        const waiting = [...live.approvals.keys()];
        live.notice = `no approval ${line.approvalId} is waiting${waiting.length ? `; waiting: ${waiting.join(", ")}` : ""}`;
        schedule();
        return;
      }
      send(line.command);
      break;
    case "json":
      send(line.text);
      break;
    case "say":
      send({ cmd: "say", text: line.text });
      break;
  }
  input.value = "";
});
el("estop").addEventListener("click", () => send({ cmd: "estop" }));
el("reset-estop").addEventListener("click", () => send({ cmd: "reset_estop" }));
el("resume").addEventListener("click", () => send({ cmd: "resume" }));
el("stop").addEventListener("click", () => send({ cmd: "stop" }));
el("patrol").addEventListener("click", () => send({ cmd: "start_patrol" }));

// Approvals: approve as proposed, approve edited args (checked against the
// skill's schema first), or reject with a reason.
const dialog = el<HTMLDialogElement>("approval-dialog");
const answerButtons = ["ad-approve", "ad-edit", "ad-reject"].map((id) => el<HTMLButtonElement>(id));
/** The approval the dialog shows: one of the run shown, or one in the fleet's queue (`robot` set). */
let reviewing: { id: string; robot?: string } | undefined;
let openedAt = 0;

function waiting(r: { id: string; robot?: string }): ApprovalView | undefined {
  return r.robot ? inQueue(fleet, r.robot, r.id) : live.approvals.get(r.id);
}

/** Answers the approval under review, on the robot it waits on. */
function answer(r: { id: string; robot?: string }, command: Record<string, unknown>): void {
  if (r.robot) sendTo(r.robot, command);
  else send(command);
}

function review(id: string, robot?: string): void {
  const a = waiting({ id, robot });
  if (!a) return;
  reviewing = { id, robot };
  // The guard: no answer is taken until the operator has had a moment to read.
  openedAt = Date.now();
  for (const b of answerButtons) b.disabled = true;
  setTimeout(() => {
    if (reviewing?.id === id && reviewing.robot === robot) for (const b of answerButtons) b.disabled = false;
  }, GUARD_MS);
  const on = robot ?? fleet.opened;
  el("ad-title").textContent = `${on ? `${on} · ` : ""}${a.approval_id}: ${opSkill(a.op) ?? a.op.op}`;
  el("ad-robot").textContent = `${on ? `robot ${on} · ` : ""}risk ${a.risk ?? "—"}`;
  el("ad-reason").textContent = a.reason;
  el("ad-asker").textContent = askedBy(a);
  el<HTMLTextAreaElement>("ad-args").value = JSON.stringify(opArgs(a.op) ?? {}, null, 2);
  el("ad-error").textContent = "";
  el<HTMLInputElement>("ad-reject-reason").value = "";
  if (!dialog.open) dialog.showModal();
}

document.body.addEventListener("click", (e) => {
  const target = e.target as HTMLElement;
  const id = target.dataset.review;
  if (id) review(id, target.dataset.robot);
  const row = target.closest<HTMLElement>("[data-open]");
  if (row?.dataset.open) open(row.dataset.open);
  const ack = target.dataset.ack;
  if (ack) send({ cmd: "acknowledge", incident_id: ack });
});
/** The dialog's approval was answered elsewhere (or withdrawn): close it. */
function closeIfAnswered(): void {
  if (dialog.open && reviewing && !waiting(reviewing)) {
    live.notice = `approval ${reviewing.id} is no longer waiting`;
    closeDialog();
  }
}

function closeDialog(): void {
  reviewing = undefined;
  if (dialog.open) dialog.close();
}

/** Whether a click may answer the card; says why not on the dialog. */
function deliberate(e: MouseEvent): boolean {
  const why = refusal(e, openedAt, Date.now());
  el("ad-error").textContent = why ?? "";
  return why === undefined;
}

el("ad-approve").addEventListener("click", (e) => {
  if (!deliberate(e)) return;
  if (reviewing) answer(reviewing, { cmd: "approve", approval_id: reviewing.id });
  closeDialog();
});
el("ad-edit").addEventListener("click", (e) => {
  if (!deliberate(e)) return;
  const r = reviewing;
  const a = r ? waiting(r) : undefined;
  if (!r || !a) return closeDialog();
  let args: unknown;
  try {
    args = JSON.parse(el<HTMLTextAreaElement>("ad-args").value);
  } catch (err) {
    el("ad-error").textContent = `not JSON: ${(err as Error).message}`;
    return;
  }
  // The skills are known for the run shown (the fleet's queue: the robot opened, if it is that one).
  const schema = opSkill(a.op) && (!r.robot || r.robot === fleet.opened) ? live.skills.get(opSkill(a.op) ?? "")?.args_schema : undefined;
  const problems = validate(schema, args);
  if (problems.length) {
    el("ad-error").textContent = problems.join("; ");
    return;
  }
  answer(r, { cmd: "edit", approval_id: a.approval_id, args });
  closeDialog();
});
el("ad-reject").addEventListener("click", (e) => {
  if (!deliberate(e)) return;
  const reason = el<HTMLInputElement>("ad-reject-reason").value.trim() || DEFAULT_REJECT_REASON;
  if (reviewing) answer(reviewing, { cmd: "reject", approval_id: reviewing.id, reason });
  closeDialog();
});
el("ad-cancel").addEventListener("click", closeDialog);

// The fleet: back to the board; E-stop every robot, asked first.
el("fleet-back").addEventListener("click", () => open(undefined));
const estopAll = el<HTMLDialogElement>("estop-all-dialog");
el("estop-all").addEventListener("click", () => {
  const n = fleet.board?.robots.length ?? 0;
  el("estop-all-count").textContent = `The E-stop goes to all ${n} robot${n === 1 ? "" : "s"} on ${fleet.broker}.`;
  estopAll.showModal();
  el("estop-all-no").focus();
});
el("estop-all-yes").addEventListener("click", () => {
  request({ op: "estop_all" });
  live.notice = "E-STOP sent to every robot";
  estopAll.close();
  schedule();
});
el("estop-all-no").addEventListener("click", () => {
  live.notice = "E-stop all: not sent";
  estopAll.close();
  schedule();
});

// About: what robobrain is, and whose work it stands on (the credit the
// command line and the console show too).
const about = el<HTMLDialogElement>("about-dialog");
el("about").addEventListener("click", () => about.showModal());
el("about-close").addEventListener("click", () => about.close());
dialog.addEventListener("close", () => {
  reviewing = undefined;
});

// The event log's filters.
const filters = el("filters");
filters.innerHTML = LOG_KINDS.map((k) => `<label><input type="checkbox" data-kind="${k}" ${filter.hidden.has(k) ? "" : "checked"}>${k}</label>`).join("");
filters.addEventListener("change", (e) => {
  const box = e.target as HTMLInputElement;
  const kind = box.dataset.kind;
  if (!kind) return;
  if (box.checked) filter.hidden.delete(kind);
  else filter.hidden.add(kind);
  schedule();
});
el<HTMLInputElement>("log-filter").addEventListener("input", (e) => {
  filter.text = (e.target as HTMLInputElement).value;
  schedule();
});

// Replay: load a JSONL run log and scrub through it.
const scrub = el<HTMLInputElement>("scrub");
el<HTMLInputElement>("replay-file").addEventListener("change", async (e) => {
  const file = (e.target as HTMLInputElement).files?.[0];
  if (!file) return;
  try {
    replayEvents = parseLog(await file.text());
  } catch (err) {
    live.notice = `${file.name}: ${(err as Error).message}`;
    schedule();
    return;
  }
  scrub.max = String(replayEvents.length);
  scrub.value = String(replayEvents.length);
  el("replay-bar").hidden = false;
  showReplay();
});
function showReplay(): void {
  if (!replayEvents) return;
  const n = Number(scrub.value);
  shown = replay(live.map, replayEvents, n);
  const at = replayEvents[Math.max(0, n - 1)];
  el("scrub-label").textContent = `${n}/${replayEvents.length} events${at ? ` · ${at.time.toFixed(1)} s` : ""}`;
  schedule();
}
scrub.addEventListener("input", showReplay);
el("replay-close").addEventListener("click", () => {
  replayEvents = undefined;
  shown = live;
  el("replay-bar").hidden = true;
  schedule();
});

window.addEventListener("resize", schedule);
(window as unknown as { robobrain: unknown }).robobrain = { state: () => live, fleet: () => fleet, latencies, send };
schedule();
