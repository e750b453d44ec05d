// The map canvas: walls, zones, passages (blocked in red), incidents,
// smart-home devices in their rooms, the robot with its heading, its planned
// path and the trail it left.

import type { DeviceView, MapView } from "./protocol";
import type { ViewState } from "./state";

let wallsFor: { map: MapView; canvas: HTMLCanvasElement } | undefined;

/** The walls drawn once per map, one pixel a cell. */
function walls(map: MapView): HTMLCanvasElement {
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

/** Draws `s` on `canvas`, fitting the map to it. */
export function drawMap(canvas: HTMLCanvasElement, s: ViewState): void {
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
  const px = (x: number) => x * scale;
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
    s.trail.forEach((p, i) => (i ? g.lineTo(px(p.x), px(p.y)) : g.moveTo(px(p.x), px(p.y))));
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

/** The battery history as a sparkline on `canvas`. */
export function drawSparkline(canvas: HTMLCanvasElement, points: { time: number; pct: number }[]): void {
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
    const xx = ((p.time - t0) / Math.max(t1 - t0, 1e-6)) * (w - 2) + 1;
    const yy = h - 1 - (p.pct / 100) * (h - 2);
    if (i) g.lineTo(xx, yy);
    else g.moveTo(xx, yy);
  });
  g.stroke();
}

/** Whether a device's state reads as on / open / unlocked (drawn filled). */
export function deviceActive(d: DeviceView): boolean {
  const st = d.state ?? {};
  return st.on === true || st.state === "on" || st.state === "open" || st.locked === false || st.open === true;
}

/** Devices as small markers along the bottom edge of their room's zone (the
 * side panel names them): filled when on or open, hollow when off, grey with
 * a cross when offline. */
function drawDevices(g: CanvasRenderingContext2D, map: MapView, s: ViewState, px: (m: number) => number): void {
  const perRoom = new Map<string, number>();
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
