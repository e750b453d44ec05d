// The page's timings in Chromium against a real `robobrain serve` making
// ≥ 200 events/s (0.1 s ticks at 20× real time, telemetry every tick, a
// patrol under way): page load → first snapshot painted, over 20 loads; and
// event → DOM (from the event's wall clock at the core to the frame that
// painted it) over 10 s. Prints JSON. Run by scripts/bench.sh:
// ROBOBRAIN_BIN=target/release/robobrain node ui/tests/bench.mjs

import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const bin = process.env.ROBOBRAIN_BIN ?? "target/release/robobrain";
const loads = Number(process.env.LOADS ?? 20);
const seconds = Number(process.env.SECONDS_LIVE ?? 10);
const work = mkdtempSync(join(tmpdir(), "rb-web-bench-"));
writeFileSync(join(work, "robobrain.toml"), `runs_dir = "${join(work, "runs")}"\n[kernel]\ntelemetry_interval_s = 0.1\n[patrol]\ninterval_s = 60.0\n[speech]\nvoice = "text"\n[skills]\nkeep_frames = false\n`);

const server = spawn(bin, ["--config", join(work, "robobrain.toml"), "serve", "--listen", "127.0.0.1:0", "--speed", "20", "--say", "patrol"], { stdio: ["ignore", "ignore", "pipe"] });
const url = await new Promise((resolve, reject) => {
  let err = "";
  server.stderr.on("data", (d) => {
    err += d;
    const m = err.match(/ at (http:\/\/\S+)\n/);
    if (m) resolve(m[1]);
  });
  server.on("exit", (c) => reject(new Error(`serve exited ${c}: ${err}`)));
});

const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.round((s.length - 1) * q)];
};

const browser = await chromium.launchPersistentContext(join(work, "profile"), {
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const firstPaint = [];
  for (let i = 0; i < loads; i++) {
    await page.goto(`${url}?n=${i}`);
    // performance.now() counts from the navigation's start.
    const t = await page.evaluate(() => new Promise((resolve) => {
      const poll = () => {
        if (window.robobrain?.state().snap && document.getElementById("seq").textContent !== "0") resolve(performance.now());
        else requestAnimationFrame(poll);
      };
      poll();
    }));
    firstPaint.push(t);
  }
  await page.evaluate(() => window.robobrain.latencies.splice(0));
  const seq0 = await page.evaluate(() => window.robobrain.state().seq);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const lat = await page.evaluate(() => [...window.robobrain.latencies]);
  const seq1 = await page.evaluate(() => window.robobrain.state().seq);
  console.log(JSON.stringify({
    load_to_first_snapshot_ms: { n: loads, p50: Math.round(pct(firstPaint, 0.5)), p99: Math.round(pct(firstPaint, 0.99)) },
    event_to_dom_ms: { n: lat.length, p50: pct(lat, 0.5), p99: pct(lat, 0.99), max: Math.max(...lat) },
    events_per_s: Math.round((seq1 - seq0) / seconds),
  }));
} finally {
  await browser.close();
  server.kill("SIGTERM");
}
