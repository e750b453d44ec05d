// What the desktop app's end-to-end scripts share: start tauri-driver
// (with Debian's WebKitWebDriver under it), open a session on
// `robobrain-gui` with `args`, and plain WebDriver HTTP calls — no npm
// packages. Used by tauri-e2e.mjs and tauri-fleet-e2e.mjs.

import { spawn } from "node:child_process";
import net from "node:net";

const ELEMENT = "element-6066-11e4-a6ea-4965e9f4c6ee";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `f` every 200 ms until it gives a truthy value; fails after `ms`. */
export async function until(what, f, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** A port free on loopback now (the system picks it), for a server started next. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** tauri-driver on ports the system gave, the app started by it with `args` and `env`. */
export async function startApp({ app, driverBin, args = [], env = {} }) {
  // Under a full `./x test` a driver on a random port once never answered
  // in 20 s (a port taken, or a slow start): the system picks free ports,
  // the wait is longer, and a driver that ended says so at once.
  const port = await freePort();
  const nativePort = await freePort();
  const driver = spawn(driverBin, ["--port", String(port), "--native-port", String(nativePort)], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, ...env },
  });
  let exited = null;
  driver.on("exit", (code, signal) => { exited = signal ?? `exit code ${code}`; });
  const base = `http://127.0.0.1:${port}`;
  async function wd(method, path, body) {
    const r = await fetch(`${base}${path}`, { method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
    const v = await r.json();
    if (!r.ok) throw new Error(`${method} ${path}: ${JSON.stringify(v.value ?? v).slice(0, 300)}`);
    return v.value;
  }
  let session;
  const stop = async () => {
    if (session) await wd("DELETE", `/session/${session}`).catch(() => {});
    driver.kill("SIGTERM");
  };
  try {
    const up = await until("tauri-driver", () => exited ? Promise.resolve("exited") : fetch(`${base}/status`).then((r) => r.ok), 60000);
    if (up === "exited") throw new Error(`tauri-driver ended (${exited}) before it answered on port ${port}`);
    session = (await wd("POST", "/session", { capabilities: { alwaysMatch: { "tauri:options": { application: app, args } } } })).sessionId;
  } catch (e) {
    await stop();
    throw e;
  }
  // The W3C key, or the old JSON-wire "ELEMENT" some WebKitWebDriver builds still send.
  const find = async (css) => {
    const el = (await wd("POST", `/session/${session}/elements`, { using: "css selector", value: css }))[0];
    return el && (el[ELEMENT] ?? el.ELEMENT ?? Object.values(el)[0]);
  };
  const script = (js) => wd("POST", `/session/${session}/execute/sync`, { script: js, args: [] });
  const click = async (css) => wd("POST", `/session/${session}/element/${await find(css)}/click`, {});
  const screenshot = async () => Buffer.from(await wd("GET", `/session/${session}/screenshot`), "base64");
  return { wd, session, find, script, click, screenshot, stop };
}
