"use strict";
(() => {
  // src/approval.ts
  var GUARD_MS = 1e3;
  var DEFAULT_REJECT_REASON = "rejected by the operator";
  function parseChat(line) {
    const text = line.trim();
    if (!text) return { kind: "nothing" };
    if (text.startsWith("{")) return { kind: "json", text };
    const m = /^\/(approve|reject|edit)(?:\s+(\S+))?(?:\s+([\s\S]*))?$/i.exec(text);
    if (!m) return { kind: "say", text };
    const verb = m[1].toLowerCase();
    const id = m[2];
    const rest = (m[3] ?? "").trim();
    if (!id) return { kind: "error", message: `usage: /${verb} ID${verb === "approve" ? "" : verb === "reject" ? " [REASON]" : " JSON"}` };
    switch (verb) {
      case "approve":
        if (rest) return { kind: "error", message: "usage: /approve ID" };
        return { kind: "answer", approvalId: id, command: { cmd: "approve", approval_id: id } };
      case "reject":
        return { kind: "answer", approvalId: id, command: { cmd: "reject", approval_id: id, reason: rest || DEFAULT_REJECT_REASON } };
      default: {
        if (!rest) return { kind: "error", message: "usage: /edit ID JSON (or click review to edit on the card)" };
        try {
          return { kind: "answer", approvalId: id, command: { cmd: "edit", approval_id: id, args: JSON.parse(rest) } };
        } catch (e) {
          return { kind: "error", message: `/edit: the arguments are not valid JSON: ${e.message}` };
        }
      }
    }
  }
  function refusal(click, openedAt2, now) {
    if (now - openedAt2 < GUARD_MS) return "the card just opened: read it, then click (answers wait a second)";
    if (!click.isTrusted || click.detail === 0) return "answer with a click, or type /approve ID, /reject ID or /edit ID JSON in the chat";
    return void 0;
  }

  // src/protocol.ts
  function originWords(o) {
    return `${o.door}${o.role === "viewer" ? " viewer" : ""}${o.detail ? `: ${o.detail}` : ""}`;
  }
  function askedBy(a) {
    return a.requested_by ? `asked by ${originWords(a.requested_by)}` : "asked by no one: the robot's own task";
  }
  function opSkill(op) {
    return op.op === "dispatch" ? op.skill : void 0;
  }
  function opArgs(op) {
    return op.op === "dispatch" ? op.args : void 0;
  }
  function opWords(op) {
    switch (op.op) {
      case "dispatch":
        return `${op.skill} ${JSON.stringify(op.args)}`;
      case "wait":
        return `wait ${op.seconds}s`;
      case "cancel":
        return `cancel ${op.goal_id}`;
    }
  }
  function runSummary(run) {
    const brain = run.brain.kind === "model" && run.brain.model ? `model ${run.brain.model}` : run.brain.kind;
    const services = run.services.length ? run.services.map((s) => `${s.name}(${s.error ? "failed" : s.tools})`).join(", ") : "none";
    return `brain ${brain} · memory ${run.memory.mode} · mcp ${services}`;
  }

  // src/fleet.ts
  function emptyFleet() {
    return { on: false, role: "viewer", broker: "", pending: /* @__PURE__ */ new Map() };
  }
  function isFleetMessage(m) {
    return m.type === "fleet_hello" || m.type === "fleet" || m.type === "robot" || m.type === "sent" || m.type === "reply";
  }
  function replyNotice(robot, reply) {
    switch (reply.status) {
      case "accepted":
      case "duplicate":
        return void 0;
      default:
        return `${robot} ${reply.status} a command${reply.code ? ` (${reply.code})` : ""}${reply.message ? `: ${reply.message}` : ""}`;
    }
  }
  function applyFleet(s, m) {
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
  function openRequest(robot) {
    return robot ? { op: "open", robot } : { op: "close" };
  }
  function sendRequest(robot, line) {
    return { op: "send", robot, line };
  }
  function queued(s, robot, id) {
    return s.board?.approvals.find((a) => a.robot === robot && a.approval.approval_id === id)?.approval;
  }
  function what(a) {
    return opWords(a.op);
  }
  function summary(board) {
    if (!board) return "waiting for the broker…";
    const online = board.robots.filter((r) => r.online).length;
    const n = board.approvals.length;
    return `${online}/${board.robots.length} robots online · ${n} approval${n === 1 ? "" : "s"} waiting${board.connected ? "" : " · broker link DOWN"}`;
  }

  // src/map.ts
  var wallsFor;
  function walls(map) {
    if (wallsFor?.map === map) return wallsFor.canvas;
    const c = document.createElement("canvas");
    c.width = map.width;
    c.height = map.height;
    const g = c.getContext("2d");
    if (g) {
      const img = g.createImageData(map.width, map.height);
      map.rows.forEach((row, r) => {
        for (let col = 0; col < row.length; col++) {
          const i = 4 * (r * map.width + col);
          const wall = row[col] === "#";
          img.data[i] = wall ? 40 : 246;
          img.data[i + 1] = wall ? 44 : 247;
          img.data[i + 2] = wall ? 52 : 249;
          img.data[i + 3] = 255;
        }
      });
      g.putImageData(img, 0, 0);
    }
    wallsFor = { map, canvas: c };
    return c;
  }
  function drawMap(canvas, s) {
    const g = canvas.getContext("2d");
    if (!g) return;
    const w = canvas.clientWidth || 600;
    const h = canvas.clientHeight || 400;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
    if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const map = s.map;
    const metresW = map ? map.width * map.resolution : 20;
    const metresH = map ? map.height * map.resolution : 15;
    const scale = Math.min(w / metresW, h / metresH);
    const px = (x2) => x2 * scale;
    if (map) {
      g.imageSmoothingEnabled = false;
      g.drawImage(walls(map), 0, 0, px(metresW), px(metresH));
      g.font = "12px system-ui, sans-serif";
      for (const z of map.zones) {
        g.strokeStyle = z.restricted ? "#c2410c" : z.outside ? "#64748b" : "#94a3b8";
        g.setLineDash(z.outside ? [4, 3] : []);
        g.strokeRect(px(z.rect.x0), px(z.rect.y0), px(z.rect.x1 - z.rect.x0), px(z.rect.y1 - z.rect.y0));
        g.fillStyle = "#475569";
        g.fillText(z.name.replace(/_/g, " "), px(z.rect.x0 + 0.35), px(z.rect.y0 + 0.35) + 10);
      }
      g.setLineDash([]);
      const blocked = new Set(s.snap?.blocked_passages ?? []);
      for (const p of map.passages) {
        if (!blocked.has(p.name)) continue;
        g.fillStyle = "rgba(220, 38, 38, 0.6)";
        g.fillRect(px(p.rect.x0), px(p.rect.y0), px(p.rect.x1 - p.rect.x0), px(p.rect.y1 - p.rect.y0));
      }
      g.fillStyle = "#16a34a";
      g.fillRect(px(map.dock.x) - 4, px(map.dock.y) - 4, 8, 8);
      for (const inc of s.snap?.incidents ?? []) {
        const z = map.zones.find((zz) => zz.name === inc.zone);
        if (!z) continue;
        const cx = px((z.rect.x0 + z.rect.x1) / 2);
        const cy = px((z.rect.y0 + z.rect.y1) / 2);
        g.fillStyle = inc.kind === "fire" || inc.kind === "smoke" ? "rgba(234, 88, 12, 0.35)" : "rgba(59, 130, 246, 0.3)";
        g.beginPath();
        g.arc(cx, cy, 18, 0, 2 * Math.PI);
        g.fill();
        g.fillStyle = "#9a3412";
        g.fillText(inc.kind, cx - 14, cy + 4);
      }
    }
    if (map) drawDevices(g, map, s, px);
    if (s.trail.length > 1) {
      g.strokeStyle = "rgba(37, 99, 235, 0.35)";
      g.lineWidth = 2;
      g.beginPath();
      s.trail.forEach((p, i) => i ? g.lineTo(px(p.x), px(p.y)) : g.moveTo(px(p.x), px(p.y)));
      g.stroke();
    }
    const robot = s.snap?.robot;
    if (!robot) return;
    const path = robot.path ?? [];
    if (path.length > 0) {
      g.strokeStyle = "#2563eb";
      g.setLineDash([6, 4]);
      g.lineWidth = 1.5;
      g.beginPath();
      g.moveTo(px(robot.pose.x), px(robot.pose.y));
      for (const p of path) g.lineTo(px(p.x), px(p.y));
      g.stroke();
      g.setLineDash([]);
    }
    const { x, y, theta } = robot.pose;
    const r = Math.max(6, px(0.25));
    g.save();
    g.translate(px(x), px(y));
    g.rotate(theta);
    g.fillStyle = s.snap?.estop ? "#dc2626" : "#1d4ed8";
    g.beginPath();
    g.moveTo(r * 1.4, 0);
    g.lineTo(-r, r * 0.9);
    g.lineTo(-r, -r * 0.9);
    g.closePath();
    g.fill();
    g.restore();
  }
  function drawSparkline(canvas, points) {
    const g = canvas.getContext("2d");
    if (!g) return;
    const w = canvas.width;
    const h = canvas.height;
    g.clearRect(0, 0, w, h);
    if (points.length < 2) return;
    const t0 = points[0].time;
    const t1 = points[points.length - 1].time || t0 + 1;
    g.strokeStyle = "#16a34a";
    g.lineWidth = 1.5;
    g.beginPath();
    points.forEach((p, i) => {
      const xx = (p.time - t0) / Math.max(t1 - t0, 1e-6) * (w - 2) + 1;
      const yy = h - 1 - p.pct / 100 * (h - 2);
      if (i) g.lineTo(xx, yy);
      else g.moveTo(xx, yy);
    });
    g.stroke();
  }
  function deviceActive(d) {
    const st = d.state ?? {};
    return st.on === true || st.state === "on" || st.state === "open" || st.locked === false || st.open === true;
  }
  function drawDevices(g, map, s, px) {
    const perRoom = /* @__PURE__ */ new Map();
    for (const d of s.devices.values()) {
      const z = map.zones.find((zz) => zz.name === d.room);
      if (!z) continue;
      const k = perRoom.get(z.name) ?? 0;
      perRoom.set(z.name, k + 1);
      const cx = px(z.rect.x0) + 10 + 14 * k;
      const cy = px(z.rect.y1) - 10;
      if (cx > px(z.rect.x1) - 6) continue;
      g.beginPath();
      g.arc(cx, cy, 5, 0, 2 * Math.PI);
      if (d.online === false) {
        g.strokeStyle = "#94a3b8";
        g.stroke();
        g.beginPath();
        g.moveTo(cx - 4, cy - 4);
        g.lineTo(cx + 4, cy + 4);
        g.stroke();
      } else if (deviceActive(d)) {
        g.fillStyle = "#eab308";
        g.fill();
      } else {
        g.strokeStyle = "#a16207";
        g.stroke();
      }
    }
  }

  // src/schema.ts
  function typeOf(v) {
    if (v === null) return "null";
    if (Array.isArray(v)) return "array";
    if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
    return typeof v;
  }
  function typeMatches(want, got) {
    const wants = Array.isArray(want) ? want : [want];
    return wants.some((w) => w === got || w === "number" && got === "integer");
  }
  function validate(schema, value, path = "") {
    if (typeof schema !== "object" || schema === null) return [];
    const s = schema;
    const at = path || "/";
    const got = typeOf(value);
    if (s.type !== void 0 && !typeMatches(s.type, got)) return [`${at}: expected ${JSON.stringify(s.type)}, found ${got}`];
    const errors = [];
    if (Array.isArray(s.enum) && !s.enum.some((x) => JSON.stringify(x) === JSON.stringify(value))) errors.push(`${at}: expected one of ${JSON.stringify(s.enum)}`);
    if (typeof value === "string") {
      if (typeof s.minLength === "number" && [...value].length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
      if (typeof s.maxLength === "number" && [...value].length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
    }
    if (typeof value === "number") {
      if (typeof s.minimum === "number" && value < s.minimum) errors.push(`${at}: below ${s.minimum}`);
      if (typeof s.maximum === "number" && value > s.maximum) errors.push(`${at}: above ${s.maximum}`);
    }
    if (Array.isArray(value)) {
      if (typeof s.minItems === "number" && value.length < s.minItems) errors.push(`${at}: fewer than ${s.minItems} items`);
      value.forEach((item, i) => errors.push(...validate(s.items, item, `${path}/${i}`)));
    }
    if (got === "object") {
      const obj = value;
      const props = s.properties ?? {};
      for (const key of s.required ?? []) {
        if (!(key in obj)) errors.push(`${at}: missing required "${key}"`);
      }
      for (const [key, v] of Object.entries(obj)) {
        if (key in props) errors.push(...validate(props[key], v, `${path}/${key}`));
        else if (s.additionalProperties === false) errors.push(`${path}/${key}: not allowed`);
      }
    }
    return errors;
  }

  // src/state.ts
  var KEEP = 500;
  var KEEP_LOG = 2e3;
  function empty() {
    return {
      role: "viewer",
      thread: "",
      skills: /* @__PURE__ */ new Map(),
      seq: 0,
      battery: [],
      trail: [],
      decisions: [],
      tokens: { purpose: "", text: "" },
      speech: [],
      approvals: /* @__PURE__ */ new Map(),
      tasks: /* @__PURE__ */ new Map(),
      alerts: /* @__PURE__ */ new Map(),
      devices: /* @__PURE__ */ new Map(),
      memory: [],
      log: []
    };
  }
  function push(list, item, keep) {
    list.push(item);
    if (list.length > keep) list.splice(0, list.length - keep);
  }
  function str(v) {
    return typeof v === "string" ? v : v === void 0 || v === null ? "" : JSON.stringify(v);
  }
  function raw(e) {
    const { seq: _s, time: _t, wall_ms: _w, thread_id: _th, step: _st, kind: _k, origin: _o, ...rest } = e;
    return JSON.stringify(rest).slice(0, 200);
  }
  function takeSnapshot(s, snap) {
    s.snap = snap;
    if (snap.run) s.run = snap.run;
    s.thread = snap.thread_id;
    if (snap.seq !== void 0) s.seq = Math.max(s.seq, snap.seq);
    s.approvals = new Map(snap.approvals.map((a) => [a.approval_id, a]));
    s.tasks = new Map(snap.tasks.map((t2) => [t2.id, t2]));
    for (const a of snap.alerts ?? []) s.alerts.set(a.id, a);
    for (const [id, d] of Object.entries(snap.devices ?? {})) s.devices.set(id, { ...s.devices.get(id) ?? {}, ...d });
    push(s.battery, { time: snap.time, pct: snap.robot.battery_pct }, KEEP);
  }
  function applyEvent(s, e, text) {
    if (e.seq <= s.seq && e.kind !== "snapshot") return;
    s.seq = Math.max(s.seq, e.seq);
    if (e.kind !== "token" && e.kind !== "telemetry") {
      const entry = { seq: e.seq, time: e.time, kind: e.kind, text: text ?? raw(e) };
      if (e.origin) entry.origin = originWords(e.origin);
      push(s.log, entry, KEEP_LOG);
    }
    const snap = s.snap;
    if (snap) snap.time = e.time;
    switch (e.kind) {
      case "snapshot":
        takeSnapshot(s, e.snapshot);
        break;
      case "run":
        s.run = e.run;
        break;
      case "telemetry":
        if (snap) {
          snap.robot.pose = e.pose;
          snap.robot.battery_pct = e.battery_pct;
          snap.robot.charging = e.charging;
          snap.robot.zone = e.zone ?? null;
          snap.robot.distance_to_target = e.distance_to_target ?? null;
          snap.robot.busy = e.busy ?? [];
        }
        push(s.battery, { time: e.time, pct: e.battery_pct }, KEEP);
        {
          const p = e.pose;
          const last = s.trail[s.trail.length - 1];
          if (!last || Math.hypot(last.x - p.x, last.y - p.y) > 0.05) push(s.trail, { x: p.x, y: p.y }, 4 * KEEP);
        }
        break;
      case "mode":
        if (snap) snap.mode = e.to;
        break;
      case "activity":
        if (snap) snap.activity = e.to;
        break;
      case "task": {
        const t2 = e.task;
        s.tasks.set(t2.id, t2);
        break;
      }
      case "decision":
        push(s.decisions, {
          seq: e.seq,
          time: e.time,
          type: e.decision_type,
          reason: e.reason,
          brain: e.brain,
          task: e.task_id,
          ops: (e.ops ?? []).map((o) => o.skill ? `${o.op} ${o.skill}` : o.op).join(", ")
        }, KEEP);
        s.tokens = { purpose: "", text: "" };
        break;
      case "understanding": {
        const rows = e.rows ?? [];
        const passed = rows.filter((r) => r.outcome !== "took").map((r) => `${r.understander} ${r.outcome}: ${r.reason}`);
        const reading = e.reading;
        push(s.decisions, {
          seq: e.seq,
          time: e.time,
          type: "understood",
          reason: `“${str(e.utterance)}”${passed.length ? ` — ${passed.join("; ")}` : ""}`,
          brain: e.by ?? "nobody",
          task: "",
          ops: reading?.intent ?? ""
        }, KEEP);
        break;
      }
      case "token":
        if (s.tokens.purpose !== e.purpose) s.tokens = { purpose: e.purpose, text: "" };
        s.tokens.text = (s.tokens.text + e.text).slice(-4e3);
        break;
      case "speech":
        push(s.speech, { seq: e.seq, time: e.time, text: e.text, extra: e.track }, KEEP);
        break;
      case "approval": {
        const id = e.approval_id;
        if (e.status === "requested") {
          const a = { approval_id: id, task_id: e.task_id, op: e.op, reason: e.reason, risk: e.risk ?? "" };
          if (e.requested_by) a.requested_by = e.requested_by;
          s.approvals.set(id, a);
        } else {
          s.approvals.delete(id);
        }
        break;
      }
      case "alert": {
        const i = e.incident;
        s.alerts.set(i.id, i);
        break;
      }
      case "device": {
        const id = str(e.device);
        if (id) {
          const known = s.devices.get(id) ?? {};
          s.devices.set(id, {
            ...known,
            state: e.state ?? known.state,
            online: e.online ?? known.online,
            room: e.room ?? known.room,
            reason: e.reason
          });
        }
        break;
      }
      case "memory": {
        const used = e.used ?? [];
        const lines = used.map((u) => `#${u.id} ${u.score.toFixed(2)}${u.bm25 !== void 0 && u.bm25 !== null ? ` bm25 ${u.bm25.toFixed(2)}` : ""}${u.dense !== void 0 && u.dense !== null ? ` cos ${u.dense.toFixed(2)}` : ""}: ${u.text} — ${u.why}`);
        push(s.memory, { seq: e.seq, time: e.time, text: text ?? raw(e), extra: lines.join("\n") }, KEEP);
        break;
      }
      case "skill":
        if (snap) {
          const goal = e.goal_id;
          const before = snap.running.find((r) => r.goal_id === goal);
          snap.running = snap.running.filter((r) => r.goal_id !== goal);
          if (e.status === "dispatched" || e.status === "feedback") {
            snap.running.push({
              goal_id: goal,
              skill: e.skill,
              args: e.args ?? before?.args ?? null,
              started_at: before?.started_at ?? e.time,
              deadline: before?.deadline ?? 0,
              resources: before?.resources ?? [],
              feedback: e.feedback ?? before?.feedback ?? null
            });
          }
        }
        break;
      default:
        break;
    }
  }
  function apply(s, m) {
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
        if (m.snapshot.seq !== void 0) s.seq = m.snapshot.seq;
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
  function parseLog(text) {
    const out = [];
    text.split("\n").forEach((line, i) => {
      const t2 = line.trim();
      if (!t2) return;
      let v;
      try {
        v = JSON.parse(t2);
      } catch (err) {
        throw new Error(`line ${i + 1}: not JSON (${err.message})`);
      }
      const e = v;
      if (typeof e.seq !== "number" || typeof e.kind !== "string") throw new Error(`line ${i + 1}: not an event (expected "seq" and "kind")`);
      out.push(e);
    });
    return out;
  }
  function replay(map, events, n) {
    const s = empty();
    s.role = "replay";
    s.map = map;
    for (const e of events.slice(0, n)) applyEvent(s, e);
    return s;
  }

  // src/transport.ts
  function tauri(t2, h) {
    void t2.event.listen("robobrain://message", (e) => h.message(e.payload));
    void t2.core.invoke("hello").then((msgs) => {
      for (const m of msgs) h.message(m);
      h.status(true, "desktop app");
    }).catch((e) => h.status(false, String(e)));
    return {
      kind: "tauri",
      send(line) {
        t2.core.invoke("send_line", { line }).catch((e) => h.message({ type: "error", code: "not_sent", message: String(e) }));
      }
    };
  }
  function websocket(h) {
    const page = new URL(window.location.href);
    let socket;
    let delay = 250;
    const open2 = () => {
      const url = new URL("/ws", page);
      url.protocol = page.protocol === "https:" ? "wss:" : "ws:";
      for (const key of ["token", "role"]) {
        const v = page.searchParams.get(key);
        if (v) url.searchParams.set(key, v);
      }
      const seq = h.lastSeq();
      if (seq > 0) {
        url.searchParams.set("since", String(seq));
        url.searchParams.set("thread", h.thread());
      }
      const ws = new WebSocket(url);
      socket = ws;
      ws.onopen = () => {
        delay = 250;
        h.status(true, url.host);
      };
      ws.onmessage = (m) => h.message(JSON.parse(String(m.data)));
      ws.onclose = () => {
        h.status(false, `reconnecting to ${url.host}…`);
        setTimeout(open2, delay);
        delay = Math.min(delay * 2, 4e3);
      };
    };
    open2();
    return {
      kind: "websocket",
      send(line) {
        if (socket?.readyState === WebSocket.OPEN) socket.send(line);
        else h.message({ type: "error", code: "not_sent", message: "not connected" });
      }
    };
  }
  function connect(h) {
    const t2 = window.__TAURI__;
    return t2 ? tauri(t2, h) : websocket(h);
  }

  // src/view.ts
  var esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
  var $ = (id) => {
    const el2 = document.getElementById(id);
    if (!el2) throw new Error(`the page has no #${id}`);
    return el2;
  };
  var painted = /* @__PURE__ */ new Map();
  function set(id, html) {
    if (painted.get(id) === html) return;
    $(id).innerHTML = html;
    painted.set(id, html);
  }
  var t = (time) => `${time.toFixed(1)}s`;
  function renderPanels(s, filter2) {
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
    const text = filter2.text.toLowerCase();
    const lines = s.log.filter((l) => !filter2.hidden.has(l.kind) && (!text || l.text.toLowerCase().includes(text) || l.kind.includes(text)));
    set("log", lines.slice(-200).map((l) => `<li class="log k-${esc(l.kind)}"><span class="time">${t(l.time)}</span> <span class="kind">${esc(l.kind)}</span> ${esc(l.text)}${l.origin ? ` <span class="origin muted">← ${esc(l.origin)}</span>` : ""}</li>`).join(""));
    $("notice").textContent = s.notice ?? "";
  }
  function renderFleet(f) {
    const board = f.board;
    $("fleet-broker").textContent = f.broker;
    $("fleet-summary").textContent = summary(board);
    $("fleet-robot").textContent = f.opened ?? "";
    const rows = (board?.robots ?? []).map((r) => {
      const mode = r.estop ? "ESTOP" : r.mode ?? "—";
      const cls = `robot${r.online ? "" : " down"}${r.estop ? " estopped" : ""}`;
      return `<tr class="${cls}" data-open="${esc(r.id)}" data-robot-row="${esc(r.id)}"><td><b>${esc(r.id)}</b></td><td class="link link-${esc(r.connection)}">${esc(r.connection)}</td><td class="mode">${esc(mode)}</td><td class="activity">${esc(r.activity ?? "—")}</td><td>${r.battery_pct != null ? `${r.battery_pct.toFixed(0)}%` : "—"}</td><td class="task">${esc(r.task ?? "—")}</td><td>${r.alerts}</td><td>${r.approvals}</td></tr>`;
    });
    set("fleet-robots-body", rows.join("") || `<tr><td colspan="8" class="muted">no robot heard yet</td></tr>`);
    const queue = board?.approvals ?? [];
    set("fleet-approvals", queue.map((q) => `<li class="approval" data-fleet-approval="${esc(q.robot)}/${esc(q.approval.approval_id)}"><b>${esc(q.robot)}</b> <span class="muted">${esc(q.approval.approval_id)}</span> ${esc(what(q.approval))} — <span class="why">${esc(q.approval.reason)}</span> <span class="risk">risk ${esc(q.approval.risk ?? "—")}</span> <span class="asker muted">${esc(askedBy(q.approval))}</span> ${f.role === "operator" ? `<button type="button" data-review="${esc(q.approval.approval_id)}" data-robot="${esc(q.robot)}">review</button>` : ""}</li>`).join("") || `<li class="muted">nothing waits for approval</li>`);
    $("fleet-approvals-count").textContent = queue.length ? String(queue.length) : "";
    $("estop-all").hidden = f.role !== "operator";
  }

  // src/main.ts
  var LOG_KINDS = ["decision", "task", "skill", "approval", "speech", "alert", "mode", "activity", "guardrail", "intent", "understanding", "log", "error", "llm_call", "fault", "update", "snapshot", "device", "memory"];
  var live = empty();
  var shown = live;
  var replayEvents;
  var fleet = emptyFleet();
  var filter = { hidden: /* @__PURE__ */ new Set(["update"]), text: "" };
  var latencies = [];
  var unpainted = [];
  var queued2 = false;
  var el = (id) => document.getElementById(id);
  function paint() {
    queued2 = false;
    closeIfAnswered();
    if (fleet.on) {
      document.body.classList.toggle("fleet-board", !fleet.opened);
      el("fleet-bar").hidden = false;
      el("fleet").hidden = fleet.opened !== void 0;
      el("fleet-back").hidden = fleet.opened === void 0;
      renderFleet(fleet);
      if (fleet.notice) {
        live.notice = fleet.notice;
        fleet.notice = void 0;
      }
    }
    renderPanels(shown, filter);
    drawMap(el("map"), shown);
    drawSparkline(el("sparkline"), shown.battery);
    el("seq").textContent = String(shown.seq);
    const now = Date.now();
    for (const sent of unpainted) {
      latencies.push(now - sent);
      if (latencies.length > 5e3) latencies.shift();
    }
    unpainted = [];
  }
  function schedule() {
    if (!queued2) {
      queued2 = true;
      requestAnimationFrame(paint);
    }
  }
  function onMessage(m) {
    if (!isFleetMessage(m)) return onRun(m);
    const { robot, reopen } = applyFleet(fleet, m);
    if (reopen) request(openRequest(reopen));
    if (robot) onRun(robot);
    schedule();
  }
  function onRun(m) {
    if (m.type === "hello" && live.thread && live.thread !== m.thread_id) live = empty();
    apply(live, m);
    if (m.type === "event") unpainted.push(m.event.wall_ms);
    if (!replayEvents) shown = live;
    schedule();
  }
  var transport = connect({
    message: onMessage,
    status(connected, detail) {
      el("conn").textContent = connected ? `connected · ${detail}` : detail;
      el("conn").className = connected ? "conn up" : "conn down";
    },
    lastSeq: () => live.seq,
    thread: () => live.thread
  });
  function request(r) {
    transport.send(JSON.stringify(r));
  }
  function sendTo(robot, command) {
    request(sendRequest(robot, typeof command === "string" ? command : JSON.stringify(command)));
  }
  function send(command) {
    if (!fleet.on) return transport.send(typeof command === "string" ? command : JSON.stringify(command));
    if (!fleet.opened) {
      live.notice = "open a robot first: click its row";
      schedule();
      return;
    }
    sendTo(fleet.opened, command);
  }
  function open(robot) {
    fleet.opened = robot;
    closeDialog();
    live = empty();
    shown = live;
    request(openRequest(robot));
    schedule();
  }
  el("chat").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = el("say");
    const line = parseChat(input.value);
    switch (line.kind) {
      case "nothing":
        return;
      case "error":
        live.notice = line.message;
        schedule();
        return;
      // the line stays to fix
      case "answer":
        if (!live.approvals.has(line.approvalId)) {
          const waiting2 = [...live.approvals.keys()];
          live.notice = `no approval ${line.approvalId} is waiting${waiting2.length ? `; waiting: ${waiting2.join(", ")}` : ""}`;
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
  var dialog = el("approval-dialog");
  var answerButtons = ["ad-approve", "ad-edit", "ad-reject"].map((id) => el(id));
  var reviewing;
  var openedAt = 0;
  function waiting(r) {
    return r.robot ? queued(fleet, r.robot, r.id) : live.approvals.get(r.id);
  }
  function answer(r, command) {
    if (r.robot) sendTo(r.robot, command);
    else send(command);
  }
  function review(id, robot) {
    const a = waiting({ id, robot });
    if (!a) return;
    reviewing = { id, robot };
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
    el("ad-args").value = JSON.stringify(opArgs(a.op) ?? {}, null, 2);
    el("ad-error").textContent = "";
    el("ad-reject-reason").value = "";
    if (!dialog.open) dialog.showModal();
  }
  document.body.addEventListener("click", (e) => {
    const target = e.target;
    const id = target.dataset.review;
    if (id) review(id, target.dataset.robot);
    const row = target.closest("[data-open]");
    if (row?.dataset.open) open(row.dataset.open);
    const ack = target.dataset.ack;
    if (ack) send({ cmd: "acknowledge", incident_id: ack });
  });
  function closeIfAnswered() {
    if (dialog.open && reviewing && !waiting(reviewing)) {
      live.notice = `approval ${reviewing.id} is no longer waiting`;
      closeDialog();
    }
  }
  function closeDialog() {
    reviewing = void 0;
    if (dialog.open) dialog.close();
  }
  function deliberate(e) {
    const why = refusal(e, openedAt, Date.now());
    el("ad-error").textContent = why ?? "";
    return why === void 0;
  }
  el("ad-approve").addEventListener("click", (e) => {
    if (!deliberate(e)) return;
    if (reviewing) answer(reviewing, { cmd: "approve", approval_id: reviewing.id });
    closeDialog();
  });
  el("ad-edit").addEventListener("click", (e) => {
    if (!deliberate(e)) return;
    const r = reviewing;
    const a = r ? waiting(r) : void 0;
    if (!r || !a) return closeDialog();
    let args;
    try {
      args = JSON.parse(el("ad-args").value);
    } catch (err) {
      el("ad-error").textContent = `not JSON: ${err.message}`;
      return;
    }
    const schema = opSkill(a.op) && (!r.robot || r.robot === fleet.opened) ? live.skills.get(opSkill(a.op) ?? "")?.args_schema : void 0;
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
    const reason = el("ad-reject-reason").value.trim() || DEFAULT_REJECT_REASON;
    if (reviewing) answer(reviewing, { cmd: "reject", approval_id: reviewing.id, reason });
    closeDialog();
  });
  el("ad-cancel").addEventListener("click", closeDialog);
  el("fleet-back").addEventListener("click", () => open(void 0));
  var estopAll = el("estop-all-dialog");
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
  var about = el("about-dialog");
  el("about").addEventListener("click", () => about.showModal());
  el("about-close").addEventListener("click", () => about.close());
  dialog.addEventListener("close", () => {
    reviewing = void 0;
  });
  var filters = el("filters");
  filters.innerHTML = LOG_KINDS.map((k) => `<label><input type="checkbox" data-kind="${k}" ${filter.hidden.has(k) ? "" : "checked"}>${k}</label>`).join("");
  filters.addEventListener("change", (e) => {
    const box = e.target;
    const kind = box.dataset.kind;
    if (!kind) return;
    if (box.checked) filter.hidden.delete(kind);
    else filter.hidden.add(kind);
    schedule();
  });
  el("log-filter").addEventListener("input", (e) => {
    filter.text = e.target.value;
    schedule();
  });
  var scrub = el("scrub");
  el("replay-file").addEventListener("change", async (e) => {
    const file = e.target.files?.[0];
    if (!file) return;
    try {
      replayEvents = parseLog(await file.text());
    } catch (err) {
      live.notice = `${file.name}: ${err.message}`;
      schedule();
      return;
    }
    scrub.max = String(replayEvents.length);
    scrub.value = String(replayEvents.length);
    el("replay-bar").hidden = false;
    showReplay();
  });
  function showReplay() {
    if (!replayEvents) return;
    const n = Number(scrub.value);
    shown = replay(live.map, replayEvents, n);
    const at = replayEvents[Math.max(0, n - 1)];
    el("scrub-label").textContent = `${n}/${replayEvents.length} events${at ? ` · ${at.time.toFixed(1)} s` : ""}`;
    schedule();
  }
  scrub.addEventListener("input", showReplay);
  el("replay-close").addEventListener("click", () => {
    replayEvents = void 0;
    shown = live;
    el("replay-bar").hidden = true;
    schedule();
  });
  window.addEventListener("resize", schedule);
  window.robobrain = { state: () => live, fleet: () => fleet, latencies, send };
  schedule();
})();
