// What the page shows of a run, read from its DOM, for the Rust tests that
// compare every face (tests/faces.rs):
//
//   node ui/tests/faces.mjs page URL run        # Chromium on `robobrain serve`'s page
//   node ui/tests/faces.mjs desktop APP run     # the desktop app under tauri-driver (run under xvfb-run)
//   node ui/tests/faces.mjs page URL approval   # an approval appears, then goes
//
// `run` prints `run: <the header's run line>` once the page has it.
// `approval` prints `seen <id>` when an approval is listed and `gone <id>`
// once it is no longer (answered in another face). Lines go to stdout as
// they happen; the last is `N passed, N failed`.

import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [where, target, what] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(label, f, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await sleep(100);
  }
}

/** A way to run a script in the page: Chromium (playwright-core) or the desktop app (WebDriver). */
async function open() {
  if (where === "page") {
    const { chromium } = await import("playwright-core");
    const browser = await chromium.launchPersistentContext(join(mkdtempSync(join(tmpdir(), "rb-faces-")), "profile"), {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const page = await browser.newPage();
    page.on("pageerror", (e) => console.log(`page error: ${e}`));
    await page.goto(target);
    return { eval: (js) => page.evaluate(`(${js})()`), close: () => browser.close() };
  }
  if (where === "desktop") {
    const port = 4444 + Math.floor(Math.random() * 1000);
    const driver = spawn(process.env.TAURI_DRIVER ?? "tauri-driver", ["--port", String(port), "--native-port", String(port + 1000)], { stdio: ["ignore", "ignore", "inherit"] });
    const base = `http://127.0.0.1:${port}`;
    const wd = async (method, path, body) => {
      const r = await fetch(`${base}${path}`, { method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
      const v = await r.json();
      if (!r.ok) throw new Error(`${method} ${path}: ${JSON.stringify(v.value ?? v).slice(0, 300)}`);
      return v.value;
    };
    try {
      await until("tauri-driver", () => fetch(`${base}/status`).then((r) => r.ok), 20000);
      const session = (await wd("POST", "/session", { capabilities: { alwaysMatch: { "tauri:options": { application: target } } } })).sessionId;
      return {
        eval: (js) => wd("POST", `/session/${session}/execute/sync`, { script: `return (${js})()`, args: [] }),
        close: async () => {
          await wd("DELETE", `/session/${session}`).catch(() => {});
          driver.kill("SIGTERM");
        },
      };
    } catch (e) {
      driver.kill("SIGTERM");
      throw e;
    }
  }
  throw new Error(`usage: faces.mjs page URL | desktop APP, then run | approval (got ${where})`);
}

let passed = 0;
let failed = 0;
let face;
try {
  face = await open();
  await until("the page to connect", () => face.eval(String(() => document.getElementById("conn").className === "conn up")), 30000);
  if (what === "run") {
    const line = await until("the run line", () => face.eval(String(() => {
      const t = document.getElementById("run").textContent;
      return t && t !== "—" ? t : "";
    })), 30000);
    console.log(`run: ${line}`);
  } else if (what === "approval") {
    const ids = () => face.eval(String(() => [...window.robobrain.state().approvals.keys()].join(",")));
    const id = await until("an approval", ids, 60000);
    console.log(`seen ${id}`);
    await until(`${id} to be answered elsewhere`, async () => !(await ids()).split(",").includes(id), 60000);
    console.log(`gone ${id}`);
  } else {
    throw new Error(`what to read: run | approval (got ${what})`);
  }
  passed++;
} catch (e) {
  failed++;
  console.log(`FAIL ${where} ${what}: ${e.stack ?? e}`);
} finally {
  if (face) await face.close().catch(() => {});
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
