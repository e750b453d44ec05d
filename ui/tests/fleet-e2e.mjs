// The fleet page end to end: a real `robobrain serve --fleet` on a real
// mosquitto (passwords, the fleet ACL) with two robot brains, each its own
// `robobrain headless`, and Debian's Chromium driven by playwright-core.
// Run by tests/fleet_page.rs, which starts the broker, the robots and the
// server and passes ROBOBRAIN_FLEET_URL (the page), R1_PID and R2_PID.
//
// 1. the board shows both robots ONLINE with their state; /metrics counts them
// 2. a read-only viewer sees the queue, is offered no answer and no E-stop
//    all, and its approve is refused by the server
// 3. r1's approval is in the fleet's queue (robot, what, why, risk); r1 has
//    not moved; a click inside the guard is refused; a click after it
//    approves, and r1 goes on
// 4. r2 opened: its own single-robot view; its E-STOP reaches r2 only
// 5. E-stop all (asked first) reaches every robot
// 6. r2 frozen (SIGSTOP): CONNECTIONBROKEN on the board; thawed: ONLINE

import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const url = process.env.ROBOBRAIN_FLEET_URL;
const pids = { r1: Number(process.env.R1_PID), r2: Number(process.env.R2_PID) };
const artifacts = process.env.ROBOBRAIN_ARTIFACTS ?? "target/ui-artifacts";
const browserPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
if (!url || !pids.r1 || !pids.r2) throw new Error("ROBOBRAIN_FLEET_URL, R1_PID and R2_PID are needed (tests/fleet_page.rs sets them)");
mkdirSync(artifacts, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "rb-fleet-page-"));

let passed = 0;
let failed = 0;
async function check(name, body) {
  const started = Date.now();
  try {
    await body();
    passed++;
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}

const browser = await chromium.launchPersistentContext(join(work, "profile"), {
  executablePath: browserPath,
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

const WAIT = 60000;
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.log(`page error: ${e}`));
  const board = () => page.evaluate(() => window.robobrain.fleet().board);
  const row = async (id) => (await board())?.robots.find((r) => r.id === id);
  const rowText = (id) => page.textContent(`tr[data-robot-row="${id}"]`);
  const untilRow = (id, pred, what) => page.waitForFunction(([id, pred]) => {
    const r = window.robobrain.fleet().board?.robots.find((x) => x.id === id);
    return r && new Function("r", `return ${pred}`)(r);
  }, [id, pred], { timeout: WAIT }).catch((e) => { throw new Error(`${id}: ${what}: ${e.message}`); });

  await check("the board shows every robot with its state, and /metrics counts them", async () => {
    await page.goto(url);
    await page.waitForSelector("#conn.up", { timeout: 10000 });
    await page.waitForSelector("#fleet-bar:not([hidden])", { timeout: 10000 });
    for (const id of ["r1", "r2"]) {
      // Its row says what the board holds: ONLINE, its mode, activity and battery.
      await page.waitForFunction((id) => {
        const r = window.robobrain.fleet().board?.robots.find((x) => x.id === id);
        const text = document.querySelector(`tr[data-robot-row="${id}"]`)?.textContent ?? "";
        return r && r.mode && r.activity && r.battery_pct !== null && /ONLINE/.test(text) && text.includes(r.estop ? "ESTOP" : r.mode) && text.includes(r.activity) && text.includes(`${r.battery_pct.toFixed(0)}%`);
      }, id, { timeout: WAIT }).catch(async (e) => {
        throw new Error(`${id}'s row says ${await rowText(id)} of ${JSON.stringify(await row(id))}: ${e.message}`);
      });
    }
    if (!(await page.isHidden("main"))) throw new Error("the single-robot view shows before a robot is opened");
    const metrics = await (await fetch(new URL("/metrics", url))).text();
    if (!metrics.split("\n").includes('robobrain_fleet_robots{connection="ONLINE"} 2')) throw new Error(`/metrics says\n${metrics}`);
    const health = await fetch(new URL("/healthz", url));
    if (health.status !== 200) throw new Error(`/healthz ${health.status}`);
  });

  await check("a viewer sees the queue but is offered no answer, and its approve is refused", async () => {
    const viewer = await browser.newPage();
    viewer.on("pageerror", (e) => console.log(`viewer error: ${e}`));
    await viewer.goto(`${url}?role=viewer`);
    await viewer.waitForSelector('[data-fleet-approval^="r1/"]', { timeout: WAIT });
    if (await viewer.$('[data-fleet-approval] [data-review]')) throw new Error("a viewer is offered review");
    if (!(await viewer.isHidden("#estop-all"))) throw new Error("a viewer is offered E-STOP ALL");
    const id = await viewer.evaluate(() => window.robobrain.fleet().board.approvals.find((a) => a.robot === "r1").approval.approval_id);
    await viewer.click('tr[data-robot-row="r1"]');
    await viewer.waitForFunction(() => window.robobrain.state().snap, null, { timeout: WAIT });
    await viewer.evaluate((a) => window.robobrain.send({ cmd: "approve", approval_id: a }), id);
    await viewer.waitForFunction(() => /refused/.test(document.getElementById("notice").textContent), null, { timeout: 10000 });
    await viewer.close();
    if (!(await board()).approvals.some((a) => a.robot === "r1" && a.approval.approval_id === id)) throw new Error("a viewer's approve was taken");
  });

  await check("r1's approval is in the fleet's queue and only a deliberate click gives it", async () => {
    await page.waitForSelector('[data-fleet-approval^="r1/"]', { timeout: WAIT });
    const text = await page.textContent('[data-fleet-approval^="r1/"]');
    for (const want of ["r1", "navigate_to", "study", "risk"]) if (!text.includes(want)) throw new Error(`the queue says ${text}, not ${want}`);
    const q = (await board()).approvals.find((a) => a.robot === "r1");
    if (!text.includes(q.approval.reason) || !text.includes(q.approval.risk)) throw new Error(`the queue does not say why (${q.approval.reason}) and the risk (${q.approval.risk}): ${text}`);
    const before = await row("r1");
    if (before.zone === "study") throw new Error("r1 is in the study before its approval");
    await page.click('[data-fleet-approval^="r1/"] [data-review]');
    await page.waitForSelector("#approval-dialog[open]");
    const title = await page.textContent("#ad-title") + (await page.textContent("#ad-robot"));
    if (!title.includes("r1") || !title.includes(q.approval.risk)) throw new Error(`the dialog says ${title}`);
    // Inside the guard: refused (the button waits), and Enter on it too.
    await page.click("#ad-approve", { force: true }).catch(() => {});
    await page.focus("#ad-approve");
    await page.keyboard.press("Enter");
    await new Promise((r) => setTimeout(r, 1500));
    await page.keyboard.press("Enter");
    await page.keyboard.press("Space");
    await new Promise((r) => setTimeout(r, 500));
    if (!(await board()).approvals.some((a) => a.robot === "r1")) throw new Error("the approval went before a deliberate click");
    const still = await row("r1");
    if (still.zone !== before.zone) throw new Error(`r1 moved before its approval: ${before.zone} → ${still.zone}`);
    await page.click("#ad-approve");
    await page.waitForFunction(() => !window.robobrain.fleet().board.approvals.some((a) => a.robot === "r1"), null, { timeout: WAIT });
    await untilRow("r1", 'r.zone === "study"', "reaches the study after the approval");
    await page.screenshot({ path: join(artifacts, "fleet.png") });
  });

  await check("r2 opened shows its own view, and its E-STOP reaches r2 only", async () => {
    await page.click('tr[data-robot-row="r2"]');
    await page.waitForSelector("main", { state: "visible", timeout: 10000 });
    await page.waitForFunction(() => window.robobrain.state().snap && window.robobrain.state().map, null, { timeout: WAIT });
    if ((await page.textContent("#fleet-robot")) !== "r2") throw new Error(`the bar says ${await page.textContent("#fleet-robot")}`);
    const role = await page.textContent("#role");
    if (role !== "operator") throw new Error(`role ${role}`);
    // Its own view: words go to r2 and its events arrive.
    await page.fill("#say", "go to the kitchen");
    await page.press("#say", "Enter");
    await page.waitForFunction(() => window.robobrain.state().log.some((l) => l.kind === "intent" || l.kind === "task"), null, { timeout: WAIT });
    await page.click("#estop");
    await page.waitForFunction(() => window.robobrain.state().snap.estop || window.robobrain.state().snap.mode === "SAFE", null, { timeout: WAIT });
    await untilRow("r2", "r.estop", "E-stopped");
    if ((await row("r1")).estop) throw new Error("r1 was E-stopped by r2's button");
    await page.screenshot({ path: join(artifacts, "fleet-r2.png") });
  });

  await check("E-stop all, asked first, reaches every robot", async () => {
    await page.click("#fleet-back");
    await page.waitForSelector("#fleet:not([hidden])");
    await page.click("#estop-all");
    await page.waitForSelector("#estop-all-dialog[open]");
    await page.click("#estop-all-no");
    await new Promise((r) => setTimeout(r, 500));
    if ((await row("r1")).estop) throw new Error("no sent the E-stop");
    await page.click("#estop-all");
    await page.click("#estop-all-yes");
    await untilRow("r1", "r.estop", "E-stopped by E-stop all");
    await untilRow("r2", "r.estop", "still E-stopped");
    for (const id of ["r1", "r2"]) {
      await page.waitForFunction((id) => /ESTOP/.test(document.querySelector(`tr[data-robot-row="${id}"]`).textContent), id, { timeout: WAIT });
    }
  });

  await check("a frozen robot shows CONNECTIONBROKEN, and ONLINE again when it thaws", async () => {
    process.kill(pids.r2, "SIGSTOP");
    try {
      await page.waitForFunction(() => /CONNECTIONBROKEN/.test(document.querySelector('tr[data-robot-row="r2"]').textContent), null, { timeout: WAIT });
      if (!/ONLINE/.test(await rowText("r1"))) throw new Error(`r1 says ${await rowText("r1")}`);
    } finally {
      process.kill(pids.r2, "SIGCONT");
    }
    await page.waitForFunction(() => /ONLINE/.test(document.querySelector('tr[data-robot-row="r2"]').textContent), null, { timeout: WAIT });
  });
} catch (e) {
  failed++;
  console.log(`FAIL ${e.stack ?? e}`);
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
