// The page's pure parts under node: the reducer, log replay, the schema
// check, and how approvals are given (chat commands, the click guard).

import assert from "node:assert/strict";
import { GUARD_MS, parseChat, refusal } from "../src/approval";
import { applyFleet, emptyFleet, isFleetMessage, openRequest, queued, replyNotice, sendRequest, summary, what } from "../src/fleet";
import type { FleetBoard, FleetMessage } from "../src/protocol";
import type { Event } from "../src/generated/protocol";
import type { RunInfo, Snapshot } from "../src/protocol";
import { askedBy, originWords, runSummary } from "../src/protocol";
import { validate } from "../src/schema";
import { apply, empty, parseLog, replay } from "../src/state";

let passed = 0;
let failed = 0;
function test(name: string, body: () => void): void {
  try {
    body();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${(e as Error).stack}`);
  }
}

const snapshot: Snapshot = {
  thread_id: "t1", time: 0, step: 0, seq: 3, mode: "IDLE", activity: "IDLE", estop: false,
  robot: { pose: { x: 1, y: 1, theta: 0 }, twist: { linear: 0, angular: 0 }, battery_pct: 90, charging: false, zone: "living_room", distance_to_target: null, busy: [] },
  tasks: [], running: [], approvals: [], last_decision: null, last_failure: null, blocked_passages: [], incidents: [], alerts: [], brain: null, world: "apartment",
};
// An event with only the fields a test needs (the wire's `Event` has each kind's all).
const ev = (seq: number, kind: string, fields: Record<string, unknown>): Event => ({ seq, time: seq / 10, wall_ms: 0, thread_id: "t1", step: seq, kind, ...fields }) as unknown as Event;
const op = { op: "dispatch", skill: "navigate_to", args: { zone: "kitchen" } };
const events: Event[] = [
  ev(4, "mode", { from: "IDLE", to: "EXEC", reason: "t1" }),
  ev(5, "approval", { approval_id: "a1", task_id: "t1", status: "requested", op, reason: "low_write" }),
  ev(6, "telemetry", { pose: { x: 3, y: 1, theta: 0 }, battery_pct: 89, charging: false, zone: "kitchen", distance_to_target: 1, busy: ["base"] }),
  ev(7, "approval", { approval_id: "a1", task_id: "t1", status: "approved", op, reason: "ok" }),
  ev(8, "decision", { task_id: "t1", iteration: 1, decision_type: "FINISH", reason: "done", brain: "rule", ops: [] }),
];

test("a snapshot then events build the view; old events are ignored", () => {
  const s = empty();
  apply(s, { type: "snapshot", snapshot: structuredClone(snapshot) });
  apply(s, { type: "event", event: ev(2, "mode", { from: "X", to: "SAFE", reason: "stale" }) });
  assert.equal(s.snap?.mode, "IDLE", "an event older than the snapshot is not applied");
  for (const e of events.slice(0, 3)) apply(s, { type: "event", event: e });
  assert.equal(s.snap?.mode, "EXEC");
  assert.deepEqual([...s.approvals.keys()], ["a1"]);
  assert.equal(s.snap?.robot.zone, "kitchen");
  assert.equal(s.trail.length, 1);
  for (const e of events.slice(3)) apply(s, { type: "event", event: e });
  assert.equal(s.approvals.size, 0, "an approved request leaves the list");
  assert.equal(s.decisions[0].type, "FINISH");
  assert.equal(s.seq, 8);
});

test("a replayed log paints like the live run, and scrubbing stops part way", () => {
  const log = [ev(1, "snapshot", { snapshot: structuredClone(snapshot) }), ...events].map((e) => JSON.stringify(e)).join("\n");
  const parsed = parseLog(log);
  const full = replay(undefined, parsed, parsed.length);
  assert.equal(full.snap?.mode, "EXEC");
  assert.equal(full.decisions.length, 1);
  const early = replay(undefined, parsed, 3);
  assert.equal(early.approvals.size, 1, "at event 3 the approval still waits");
  assert.throws(() => parseLog(`${log}\n{oops`), /line 7: not JSON/);
  assert.throws(() => parseLog(`{"a":1}`), /line 1: not an event/);
});

test("an utterance's trace through the language pipeline is on the timeline: who took it, and why the others passed", () => {
  const s = empty();
  apply(s, { type: "snapshot", snapshot: structuredClone(snapshot) });
  apply(s, { type: "event", event: ev(4, "understanding", {
    utterance: "turn on the kitchen light",
    by: "home_grammar",
    reading: { intent: "HassTurnOn", slots: { name: "kitchen light" } },
    rows: [
      { understander: "robot_grammar", outcome: "passed", reason: "not one of the robot's commands" },
      { understander: "home_grammar", outcome: "took", reason: "matched" },
    ],
  }) });
  apply(s, { type: "event", event: ev(5, "understanding", { utterance: "blorp", reading: { intent: "", slots: {} }, rows: [] }) });
  const [took, nobody] = s.decisions;
  assert.equal(took.type, "understood");
  assert.equal(took.brain, "home_grammar");
  assert.equal(took.ops, "HassTurnOn");
  assert.equal(took.reason, "“turn on the kitchen light” — robot_grammar passed: not one of the robot's commands");
  assert.equal(nobody.brain, "nobody", "nobody understood it");
});

test("devices come from the snapshot and follow their events", () => {
  const s = empty();
  const snap = { ...structuredClone(snapshot), devices: { kettle_plug: { state: { on: false, power_w: 0 }, online: true, room: "kitchen" } } };
  apply(s, { type: "snapshot", snapshot: snap });
  assert.equal(s.devices.get("kettle_plug")?.room, "kitchen");
  const words = "kettle_plug: on=true power_w=1800 — devices.invoke p1.s1";
  apply(s, { type: "event", event: ev(4, "device", { device: "kettle_plug", room: "kitchen", state: { on: true, power_w: 1800 }, online: true, reason: "devices.invoke p1.s1" }), text: words });
  assert.deepEqual(s.devices.get("kettle_plug")?.state, { on: true, power_w: 1800 });
  assert.equal(s.log[s.log.length - 1].text, words, "the server's words, never the page's");
  apply(s, { type: "event", event: ev(5, "device", { device: "kettle_plug", room: "kitchen", state: { on: true, power_w: 1800 }, online: false, reason: "fault" }) });
  assert.equal(s.devices.get("kettle_plug")?.online, false, "an offline report marks it offline");
});

test("a memory event lists what was used, with scores and why", () => {
  const s = empty();
  apply(s, { type: "snapshot", snapshot: structuredClone(snapshot) });
  apply(s, { type: "event", event: ev(4, "memory", { query: "厨房的灯", mode: "hybrid", tokens: 40, budget: 600, dropped: 0, used: [{ id: 7, score: 0.91, bm25: 3.2, dense: 0.71, text: "the kitchen light flickers", why: "matched 厨房, 灯" }] }), text: "1 memory for “厨房的灯” (hybrid, 40/600 tokens)" });
  assert.equal(s.memory[0].text, "1 memory for “厨房的灯” (hybrid, 40/600 tokens)");
  // A replayed log file has no words: what was recorded is shown.
  apply(s, { type: "event", event: ev(5, "log", { level: "info", message: "hi" }) });
  assert.equal(s.log[s.log.length - 1].text, '{"level":"info","message":"hi"}');
  assert.equal(s.memory[0].extra, "#7 0.91 bm25 3.20 cos 0.71: the kitchen light flickers — matched 厨房, 灯");
});

test("an approval card says who asked, and the log where each command came from", () => {
  const s = empty();
  apply(s, { type: "snapshot", snapshot: structuredClone(snapshot) });
  const page = { door: "web", role: "operator" as const, detail: "ws#3 127.0.0.1:51234" };
  apply(s, { type: "event", event: ev(4, "intent", { utterance: "go to the study", intent: "goto", args: {}, processed_locally: true, origin: page }) });
  apply(s, { type: "event", event: ev(5, "approval", { approval_id: "a1", task_id: "t1", status: "requested", op, reason: "restricted", requested_by: page }) });
  const card = s.approvals.get("a1");
  assert.deepEqual(card?.requested_by, page);
  assert.equal(askedBy(card ?? {}), "asked by web: ws#3 127.0.0.1:51234");
  assert.equal(askedBy({}), "asked by no one: the robot's own task");
  assert.equal(s.log.find((l) => l.kind === "intent")?.origin, "web: ws#3 127.0.0.1:51234");
  assert.equal(s.log.find((l) => l.kind === "approval")?.origin, undefined, "asked for by the kernel's loop");
  assert.equal(originWords({ door: "web", role: "viewer", detail: "ws#4" }), "web viewer: ws#4");
  assert.equal(originWords({ door: "console", role: "operator" }), "console");
});

test("a viewer's refusal is shown", () => {
  const s = empty();
  apply(s, { type: "refused", reason: "read-only" });
  assert.match(s.notice ?? "", /refused: read-only/);
});

test("edited arguments are checked against the skill's schema", () => {
  const schema = { type: "object", properties: { zone: { type: "string", minLength: 1 } }, required: ["zone"], additionalProperties: false };
  assert.deepEqual(validate(schema, { zone: "kitchen" }), []);
  assert.deepEqual(validate(schema, { zone: 3 }), ['/zone: expected "string", found integer']);
  assert.deepEqual(validate(schema, {}), ['/: missing required "zone"']);
  assert.deepEqual(validate(schema, { zone: "k", speed: 2 }), ["/speed: not allowed"]);
});

test("only answers typed in full answer; everything else is said", () => {
  for (const word of ["patrol", "yes", "approve", "a", "y", "approve a1", "/approvea1"]) {
    assert.deepEqual(parseChat(word), { kind: "say", text: word }, word);
  }
  assert.deepEqual(parseChat("  "), { kind: "nothing" });
  assert.deepEqual(parseChat('{"cmd":"estop"}'), { kind: "json", text: '{"cmd":"estop"}' });
  assert.deepEqual(parseChat("/approve a1"), { kind: "answer", approvalId: "a1", command: { cmd: "approve", approval_id: "a1" } });
  assert.deepEqual(parseChat("/reject a2 too late"), { kind: "answer", approvalId: "a2", command: { cmd: "reject", approval_id: "a2", reason: "too late" } });
  assert.deepEqual(parseChat("/reject a2"), { kind: "answer", approvalId: "a2", command: { cmd: "reject", approval_id: "a2", reason: "rejected by the operator" } });
  assert.deepEqual(parseChat('/edit a3 {"zone":"kitchen"}'), { kind: "answer", approvalId: "a3", command: { cmd: "edit", approval_id: "a3", args: { zone: "kitchen" } } });
  assert.equal(parseChat("/approve").kind, "error");
  assert.equal(parseChat("/approve a1 now").kind, "error");
  assert.match((parseChat("/edit a3 {zone") as { message: string }).message, /not valid JSON/);
});

test("a click answers only after the guard, and only from the pointer", () => {
  const opened = 10_000;
  const click = { isTrusted: true, detail: 1 };
  assert.match(refusal(click, opened, opened + GUARD_MS - 1) ?? "", /just opened/);
  assert.equal(refusal(click, opened, opened + GUARD_MS), undefined);
  assert.match(refusal({ isTrusted: true, detail: 0 }, opened, opened + 5000) ?? "", /with a click/, "Enter or Space on the button");
  assert.match(refusal({ isTrusted: false, detail: 1 }, opened, opened + 5000) ?? "", /with a click/, "a scripted click");
});

test("what the run is made of comes from hello, the run event and snapshots, in the Rust words", () => {
  const run: RunInfo = {
    brain: { kind: "model", model: "qwen-max", endpoint: "http://127.0.0.1:8765/v1" },
    memory: { mode: "bm25", note: "no embedding model" },
    services: [{ name: "time", tools: 2 }, { name: "ghost", tools: 0, error: "no such program" }],
    robot: "sim:",
  };
  // The same line as RunInfo::summary's test in src-wire/src/protocol/run.rs.
  assert.equal(runSummary(run), "brain model qwen-max · memory bm25 · mcp time(2), ghost(failed)");
  assert.equal(runSummary({ brain: { kind: "rules" }, memory: { mode: "off" }, services: [], robot: "sim:" }), "brain rules · memory off · mcp none");
  let s = apply(empty(), { type: "snapshot", snapshot });
  assert.equal(s.run, undefined);
  s = apply(s, { type: "event", event: ev(4, "run", { run }) });
  assert.deepEqual(s.run, run);
  const later = { ...run, memory: { mode: "hybrid" as const } };
  s = apply(s, { type: "snapshot", snapshot: { ...snapshot, seq: 9, run: later } });
  assert.equal(s.run?.memory.mode, "hybrid");
});

const fleetBoard: FleetBoard = {
  broker: "mqtt://b:1883",
  connected: true,
  robots: [
    { id: "r1", connection: "ONLINE", online: true, mode: "EXEC", estop: false, activity: "RESPONDING", battery_pct: 88, zone: "hallway", task: "go to study (waiting_human)", alerts: 0, approvals: 1, world: "apartment" },
    { id: "r2", connection: "CONNECTIONBROKEN", online: false, mode: "IDLE", estop: true, activity: "IDLE", battery_pct: 90, zone: null, task: null, alerts: 0, approvals: 0, world: "apartment" },
  ],
  approvals: [{ robot: "r1", approval: { approval_id: "a1", task_id: "t1", op: { op: "dispatch", skill: "navigate_to", args: { zone: "study" } }, reason: "restricted zone", risk: "high_write" } }],
};

test("the fleet's messages build the board; only the opened robot's own messages reach its view", () => {
  const f = emptyFleet();
  assert.equal(isFleetMessage({ type: "snapshot", snapshot }), false);
  const hello: FleetMessage = { type: "fleet_hello", role: "operator", broker: "mqtt://b:1883" };
  assert.ok(isFleetMessage(hello));
  assert.deepEqual(applyFleet(f, hello), { reopen: undefined });
  assert.ok(f.on);
  applyFleet(f, { type: "fleet", ...fleetBoard });
  assert.equal(f.board?.robots.length, 2);
  assert.equal(summary(f.board), "1/2 robots online · 1 approval waiting");
  assert.deepEqual(applyFleet(f, { type: "robot", robot: "r1", message: { type: "snapshot", snapshot } }), {});
  f.opened = "r1";
  assert.deepEqual(applyFleet(f, { type: "robot", robot: "r1", message: { type: "snapshot", snapshot } }), { robot: { type: "snapshot", snapshot } });
  assert.deepEqual(applyFleet(f, { type: "robot", robot: "r2", message: { type: "snapshot", snapshot } }), {}, "another robot's message");
  // A new connection follows nothing: the page opens its robot again.
  assert.deepEqual(applyFleet(f, hello), { reopen: "r1" });
});

test("a fleet approval is found by robot and id, and said as what, why and risk", () => {
  const f = emptyFleet();
  applyFleet(f, { type: "fleet", ...fleetBoard });
  assert.equal(queued(f, "r1", "a1")?.risk, "high_write");
  assert.equal(queued(f, "r2", "a1"), undefined, "the same id on another robot is another approval");
  assert.equal(what(fleetBoard.approvals[0].approval), 'navigate_to {"zone":"study"}');
  assert.equal(what({ approval_id: "a2", task_id: "t", op: { op: "wait", seconds: 3 }, reason: "", risk: "low" }), "wait 3s");
});

test("fleet requests carry the robot; replies that need saying are said", () => {
  assert.deepEqual(openRequest("r2"), { op: "open", robot: "r2" });
  assert.deepEqual(openRequest(undefined), { op: "close" });
  assert.deepEqual(sendRequest("r1", '{"cmd":"estop"}'), { op: "send", robot: "r1", line: '{"cmd":"estop"}' });
  const f = emptyFleet();
  applyFleet(f, { type: "sent", robot: "r1", id: "c-1" });
  assert.equal(f.pending.get("c-1"), "r1");
  applyFleet(f, { type: "reply", robot: "r1", reply: { id: "c-1", status: "accepted" } });
  assert.equal(f.pending.size, 0);
  assert.equal(f.notice, undefined);
  assert.equal(replyNotice("r1", { status: "duplicate" }), undefined);
  applyFleet(f, { type: "reply", robot: "r2", reply: { id: "c-2", status: "refused", code: "queue_full", message: "the brain is busy" } });
  assert.equal(f.notice, "r2 refused a command (queue_full): the brain is busy");
  assert.equal(summary(undefined), "waiting for the broker…");
  assert.equal(summary({ ...fleetBoard, connected: false, approvals: [] }), "1/2 robots online · 0 approvals waiting · broker link DOWN");
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
