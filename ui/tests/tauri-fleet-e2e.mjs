// The desktop app's fleet window end to end, under Xvfb: `robobrain-gui
// --fleet mqtt://…` driven by tauri-driver + Debian's WebKitWebDriver shows
// the board with every robot ONLINE, and a robot clicked opens its own view;
// a screenshot is kept. Run by src-tauri/tests/gui.rs, which starts the
// broker and the robots and passes ROBOBRAIN_FLEET_BROKER, the robots' ids
// (ROBOBRAIN_FLEET_ROBOTS, comma-separated) and the operator's password in
// ROBOBRAIN_TEST_FLEET_PW.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startApp, until } from "./webdriver.mjs";

const app = process.env.ROBOBRAIN_GUI ?? "target/debug/robobrain-gui";
const driverBin = process.env.TAURI_DRIVER ?? "tauri-driver";
const artifacts = process.env.ROBOBRAIN_ARTIFACTS ?? "target/ui-artifacts";
const broker = process.env.ROBOBRAIN_FLEET_BROKER;
const robots = (process.env.ROBOBRAIN_FLEET_ROBOTS ?? "").split(",").filter(Boolean);
if (!broker || robots.length < 2) throw new Error("ROBOBRAIN_FLEET_BROKER and ROBOBRAIN_FLEET_ROBOTS are needed (src-tauri/tests/gui.rs sets them)");
mkdirSync(artifacts, { recursive: true });

let passed = 0;
let failed = 0;
let driven;
try {
  driven = await startApp({ app, driverBin, args: ["--fleet", broker, "--user", "operator", "--password-env", "ROBOBRAIN_TEST_FLEET_PW"] });
  const { script, click, screenshot } = driven;
  try {
    await until("the page to connect", async () => (await script("return document.getElementById('conn').className")) === "conn up", 30000);
    for (const id of robots) {
      await until(`${id} ONLINE on the board`, () => script(`return /ONLINE/.test(document.querySelector('tr[data-robot-row="${id}"]')?.textContent ?? "")`), 60000);
    }
    const bar = await script("return document.getElementById('fleet-summary').textContent");
    if (!bar.startsWith(`${robots.length}/${robots.length} robots online`)) throw new Error(`the bar says ${bar}`);
    writeFileSync(join(artifacts, "gui-fleet.png"), await screenshot());
    await click(`tr[data-robot-row="${robots[0]}"] td`);
    await until(`${robots[0]}'s own view`, () => script("return window.robobrain.state().snap && window.robobrain.state().map && document.querySelector('main').offsetParent !== null"), 30000);
    const opened = await script("return document.getElementById('fleet-robot').textContent");
    if (opened !== robots[0]) throw new Error(`the bar shows ${opened}`);
    passed++;
    console.log("ok   the desktop app's fleet window: every robot on the board, one opened (screenshot kept)");
  } catch (e) {
    failed++;
    console.log(`FAIL the desktop app's fleet window: ${e.stack ?? e}`);
  }
} catch (e) {
  failed++;
  console.log(`FAIL starting the app under tauri-driver: ${e.stack ?? e}`);
} finally {
  await driven?.stop();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
