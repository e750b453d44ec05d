// The desktop app end to end, under Xvfb: tauri-driver + Debian's
// WebKitWebDriver drive `robobrain-gui` over plain WebDriver HTTP — about
// credits Home Assistant intents; say "go
// to the kitchen"; typing `yes` + Enter and `a` in the chat leaves the
// approval waiting (the page's rule holds in the app too); a click on
// approve as the dialog opens is refused (the guard), one after it
// approves; see the task finish; a screenshot is kept.
// Run by tests/gui.rs:
//   xvfb-run -a node ui/tests/tauri-e2e.mjs   (ROBOBRAIN_GUI=target/debug/robobrain-gui)

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep, startApp, until } from "./webdriver.mjs";

const app = process.env.ROBOBRAIN_GUI ?? "target/debug/robobrain-gui";
const driverBin = process.env.TAURI_DRIVER ?? "tauri-driver";
const artifacts = process.env.ROBOBRAIN_ARTIFACTS ?? "target/ui-artifacts";
mkdirSync(artifacts, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "rb-gui-"));
const config = join(work, "robobrain.toml");
// No runs_dir: the app keeps its data in its own data folder (the test
// points XDG_DATA_HOME at a fresh one).
writeFileSync(config, `[policy]\napprove_risks = ["low_write", "high_write"]\n[speech]\nvoice = "text"\n`);

let passed = 0;
let failed = 0;
let driven;
try {
  driven = await startApp({ app, driverBin, env: { ROBOBRAIN_CONFIG: config, ROBOBRAIN_SPEED: "8" } });
  const { wd, session, find, script } = driven;
  try {
    await until("the page to connect", async () => (await script("return document.getElementById('conn').className")) === "conn up", 30000);
    // About credits Home Assistant intents (CC BY 4.0) in the app too.
    await wd("POST", `/session/${session}/element/${await find("#about")}/click`, {});
    const credits = await until("the about dialog", () => script("return document.getElementById('about-dialog').open && document.getElementById('credits').textContent"), 5000);
    if (!credits.includes("Home Assistant intents") || !credits.includes("CC BY 4.0")) throw new Error(`about says ${credits}`);
    await wd("POST", `/session/${session}/element/${await find("#about-close")}/click`, {});
    const say = await find("#say");
    await wd("POST", `/session/${session}/element/${say}/value`, { text: "go to the kitchen\uE007" });
    const review = await until("an approval", () => find("[data-review]"), 20000);
    const id = await script("return [...window.robobrain.state().approvals.keys()][0]");
    const waiting = () => script(`return window.robobrain.state().approvals.has(${JSON.stringify(id)})`);
    // Typing in the chat never answers it.
    await wd("POST", `/session/${session}/element/${say}/value`, { text: "yes\uE007" });
    await wd("POST", `/session/${session}/element/${say}/value`, { text: "a" });
    await sleep(500);
    if (!(await waiting())) throw new Error(`typing in the chat answered ${id}`);
    const typed = await script("return document.getElementById('say').value");
    if (typed !== "a") throw new Error(`the chat holds ${JSON.stringify(typed)}`);
    await wd("POST", `/session/${session}/element/${review}/click`, {});
    const approve = await until("the dialog", () => find("#approval-dialog[open] #ad-approve"), 5000);
    // As the dialog opens the answers wait (a driver may refuse to click a disabled button).
    if (!(await script("return document.getElementById('ad-approve').disabled"))) throw new Error("approve is enabled as the dialog opens");
    await wd("POST", `/session/${session}/element/${approve}/click`, {}).catch(() => {});
    await sleep(300);
    if (!(await waiting())) throw new Error(`a click inside the guard answered ${id}`);
    await until("the guard to pass", async () => !(await script("return document.getElementById('ad-approve').disabled")), 5000);
    await wd("POST", `/session/${session}/element/${approve}/click`, {});
    await until("the approval", async () => !(await waiting()), 10000);
    await until("the task to finish", () => find("#tasks li.st-succeeded"), 60000);
    const zone = await script("return window.robobrain.state().snap.robot.zone");
    if (zone !== "kitchen") throw new Error(`the robot is in ${zone}`);
    const png = await wd("GET", `/session/${session}/screenshot`);
    writeFileSync(join(artifacts, "gui.png"), Buffer.from(png, "base64"));
    passed++;
    console.log("ok   the desktop app: say, approve, the task finishes (screenshot kept)");
  } catch (e) {
    failed++;
    console.log(`FAIL the desktop app: ${e.stack ?? e}`);
  }
} catch (e) {
  failed++;
  console.log(`FAIL starting the app under tauri-driver: ${e.stack ?? e}`);
} finally {
  await driven?.stop();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
