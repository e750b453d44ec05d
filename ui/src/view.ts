// The panels: everything but the map, drawn from the state.

import { type FleetState, summary, what } from "./fleet";
import { askedBy, opArgs, opSkill, runSummary } from "./protocol";
import type { ViewState } from "./state";

const esc = (s: unknown): string =>
  String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const $ = (id: string): HTMLElement => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
};

/** The markup each panel was last given. Compared with that, not with
 * `innerHTML` (which the browser re-serialises: `&quot;` comes back as `"`),
 * so an unchanged panel is never rebuilt — a button rebuilt every frame
 * cannot be clicked. */
const painted = new Map<string, string>();

function set(id: string, html: string): void {
  if (painted.get(id) === html) return;
  $(id).innerHTML = html;
  painted.set(id, html);
}

const t = (time: number) => `${time.toFixed(1)}s`;

/** Which log kinds are shown, and the text filter. */
export interface LogFilter { hidden: Set<string>; text: string }

export function renderPanels(s: ViewState, filter: LogFilter): void {
  const snap = s.snap;
  $("thread").textContent = s.thread || "—";
  $("role").textContent = s.role;
  $("role").className = `badge role-${s.role}`;
  const mode = snap?.mode ?? "—";
  $("mode").textContent = mode;
  $("mode").className = `badge mode-${mode.toLowerCase()}`;
  const activity = snap?.activity ?? "—";
  $("activity").textContent = activity;
  $("activity").className = `badge activity-${activity.toLowerCase()}`;
  $("brain").textContent = snap?.brain ?? "—";
  $("run").textContent = s.run ? runSummary(s.run) : "—";
  $("simtime").textContent = snap ? t(snap.time) : "—";
  const pct = snap?.robot.battery_pct ?? 0;
  $("battery-pct").textContent = snap ? `${pct.toFixed(0)}%${snap.robot.charging ? " ⚡" : ""}` : "—";
  const fill = $("battery-fill");
  fill.style.width = `${Math.max(0, Math.min(100, pct))}%`;
  fill.className = pct < 20 ? "low" : pct < 40 ? "mid" : "ok";
  set("where", snap ? `${esc(snap.robot.zone ?? "between zones")}${snap.robot.distance_to_target != null ? ` · ${snap.robot.distance_to_target.toFixed(1)} m to go` : ""}${snap.robot.busy.length ? ` · busy: ${esc(snap.robot.busy.join(", "))}` : ""}` : "");
  set("failure", snap?.last_failure ? `last failure: ${esc(snap.last_failure)}` : "");

  const tasks = [...s.tasks.values()].reverse().slice(0, 12);
  set("tasks", tasks.map((k) => `<li class="task st-${esc(k.status)}" data-task="${esc(k.id)}"><b>${esc(k.id)}</b> ${esc(k.title)} <span class="st">${esc(k.status)}</span> <span class="muted">${k.step}/${k.steps}</span></li>`).join("") || `<li class="muted">no tasks</li>`);

  set("running", (snap?.running ?? []).map((r) => `<li>${esc(r.skill)} <span class="muted">${esc(JSON.stringify(r.args))}</span></li>`).join("") || `<li class="muted">nothing running</li>`);

  set("decisions", s.decisions.slice(-40).reverse().map((d) => `<li class="decision"><span class="time">${t(d.time)}</span> <b class="dt">${esc(d.type)}</b> <span class="brain brain-${esc(d.brain)}">${esc(d.brain)}</span> ${esc(d.reason)}${d.ops ? ` <span class="muted">[${esc(d.ops)}]</span>` : ""}</li>`).join("") || `<li class="muted">no decisions yet</li>`);

  set("tokens", s.tokens.text ? `<span class="muted">${esc(s.tokens.purpose)}:</span> ${esc(s.tokens.text)}` : `<span class="muted">no model is streaming</span>`);

  set("speech", s.speech.slice(-12).reverse().map((l) => `<li><span class="time">${t(l.time)}</span> <span class="track">${esc(l.extra)}</span> ${esc(l.text)}</li>`).join("") || `<li class="muted">silent</li>`);

  const alerts = [...s.alerts.values()].reverse().slice(0, 6);
  set("alerts", alerts.map((a) => `<li class="alert st-${esc(a.status)}"><b>${esc(a.id)}</b> ${esc(a.kinds.join(", "))} in ${esc(a.zone)} — ${esc(a.status)}${a.acknowledged_by ? ` by ${esc(a.acknowledged_by)}` : ""}${a.status === "open" && s.role === "operator" ? ` <button data-ack="${esc(a.id)}">acknowledge</button>` : ""}</li>`).join("") || `<li class="muted">no alerts</li>`);

  set("devices", [...s.devices.entries()].map(([id, d]) => `<li class="device${d.online === false ? " offline" : ""}" data-device="${esc(id)}"><b>${esc(id)}</b>${d.room ? ` <span class="muted">${esc(d.room)}</span>` : ""}${d.online === false ? ` <span class="st">offline</span>` : ""} <span class="muted">${esc(JSON.stringify(d.state ?? {}).slice(0, 160))}</span></li>`).join("") || `<li class="muted">no devices</li>`);
  set("memory", s.memory.slice(-10).reverse().map((m) => `<li><span class="time">${t(m.time)}</span> ${esc(m.text)}${m.extra ? `<ul class="used">${m.extra.split("\n").map((u) => `<li class="muted">${esc(u)}</li>`).join("")}</ul>` : ""}</li>`).join("") || `<li class="muted">no memory used yet</li>`);

  const approvals = [...s.approvals.values()];
  set("approvals", approvals.map((a) => `<li class="approval"><b>${esc(a.approval_id)}</b> ${esc(opSkill(a.op) ?? a.op.op)} <span class="muted">${esc(JSON.stringify(opArgs(a.op) ?? {}))}</span> — ${esc(a.reason)} <span class="asker muted">${esc(askedBy(a))}</span> ${s.role === "operator" ? `<button type="button" data-review="${esc(a.approval_id)}">review</button>` : ""}</li>`).join("") || `<li class="muted">nothing waits for approval</li>`);
  $("approvals-count").textContent = approvals.length ? String(approvals.length) : "";

  const text = filter.text.toLowerCase();
  const lines = s.log.filter((l) => !filter.hidden.has(l.kind) && (!text || l.text.toLowerCase().includes(text) || l.kind.includes(text)));
  set("log", lines.slice(-200).map((l) => `<li class="log k-${esc(l.kind)}"><span class="time">${t(l.time)}</span> <span class="kind">${esc(l.kind)}</span> ${esc(l.text)}${l.origin ? ` <span class="origin muted">← ${esc(l.origin)}</span>` : ""}</li>`).join(""));
  $("notice").textContent = s.notice ?? "";
}

/** The fleet's board: every robot in a row (click: its own view), one approval queue. */
export function renderFleet(f: FleetState): void {
  const board = f.board;
  $("fleet-broker").textContent = f.broker;
  $("fleet-summary").textContent = summary(board);
  $("fleet-robot").textContent = f.opened ?? "";
  const rows = (board?.robots ?? []).map((r) => {
    const mode = r.estop ? "ESTOP" : (r.mode ?? "—");
    const cls = `robot${r.online ? "" : " down"}${r.estop ? " estopped" : ""}`;
    return `<tr class="${cls}" data-open="${esc(r.id)}" data-robot-row="${esc(r.id)}"><td><b>${esc(r.id)}</b></td><td class="link link-${esc(r.connection)}">${esc(r.connection)}</td><td class="mode">${esc(mode)}</td><td class="activity">${esc(r.activity ?? "—")}</td><td>${r.battery_pct != null ? `${r.battery_pct.toFixed(0)}%` : "—"}</td><td class="task">${esc(r.task ?? "—")}</td><td>${r.alerts}</td><td>${r.approvals}</td></tr>`;
  });
  set("fleet-robots-body", rows.join("") || `<tr><td colspan="8" class="muted">no robot heard yet</td></tr>`);
  const queue = board?.approvals ?? [];
  set("fleet-approvals", queue.map((q) => `<li class="approval" data-fleet-approval="${esc(q.robot)}/${esc(q.approval.approval_id)}"><b>${esc(q.robot)}</b> <span class="muted">${esc(q.approval.approval_id)}</span> ${esc(what(q.approval))} — <span class="why">${esc(q.approval.reason)}</span> <span class="risk">risk ${esc(q.approval.risk ?? "—")}</span> <span class="asker muted">${esc(askedBy(q.approval))}</span> ${f.role === "operator" ? `<button type="button" data-review="${esc(q.approval.approval_id)}" data-robot="${esc(q.robot)}">review</button>` : ""}</li>`).join("") || `<li class="muted">nothing waits for approval</li>`);
  $("fleet-approvals-count").textContent = queue.length ? String(queue.length) : "";
  $("estop-all").hidden = f.role !== "operator";
}
