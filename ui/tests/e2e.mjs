// The web console end to end: a real `robobrain serve`, Debian's Chromium
// driven by playwright-core. Run by tests/web.rs (or by hand:
// ROBOBRAIN_BIN=target/debug/robobrain node ui/tests/e2e.mjs).
//
// 1. load; about credits Home Assistant intents; say "go to the kitchen", see the robot move, approve the pending
//    op, see the task finish; a screenshot is kept
// 2. the server restarts on the same port: the page reconnects by itself
// 3. a read-only viewer's approve is refused
// 4. typing in the chat never answers an approval (patrol, yes, approve, a,
//    Enter, y in six orders, each token first once and last once); Enter or
//    Space on the focused approve button and a click inside the guard are
//    refused; a click after it approves

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const bin = process.env.ROBOBRAIN_BIN ?? "target/debug/robobrain";
const artifacts = process.env.ROBOBRAIN_ARTIFACTS ?? "target/ui-artifacts";
const browserPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
mkdirSync(artifacts, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "rb-web-"));
// Every move needs the operator's approval, so there is one to give.
writeFileSync(join(work, "robobrain.toml"), `runs_dir = "${join(work, "runs")}"\n[policy]\napprove_risks = ["low_write", "high_write"]\n[speech]\nvoice = "text"\n`);

let passed = 0;
let failed = 0;
const servers = [];

function serve(listen) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["--config", join(work, "robobrain.toml"), "serve", "--listen", listen, "--speed", "8"], { stdio: ["ignore", "ignore", "pipe"] });
    servers.push(child);
    let err = "";
    child.stderr.on("data", (d) => {
      err += d;
      if (process.env.SERVE_LOG) process.stderr.write(d);
      // The whole line: a chunk may end in the middle of the address.
      const m = err.match(/ at (http:\/\/\S+)\n/);
      if (m) resolve({ child, url: m[1] });
    });
    child.on("exit", (code) => reject(new Error(`robobrain serve exited (${code}): ${err}`)));
    setTimeout(() => reject(new Error(`robobrain serve did not start: ${err}`)), 20000);
  });
}

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

const state = (page) => page.evaluate(() => window.robobrain.state());

const browser = await chromium.launchPersistentContext(join(work, "profile"), {
  executablePath: browserPath,
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

try {
  let { child, url } = await serve("127.0.0.1:0");
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.log(`page error: ${e}`));

  await check("the page loads and paints the first snapshot", async () => {
    await page.goto(url);
    await page.waitForSelector("#conn.up", { timeout: 10000 });
    await page.waitForFunction(() => window.robobrain.state().snap !== undefined, null, { timeout: 10000 });
    const role = await page.textContent("#role");
    if (role !== "operator") throw new Error(`role ${role}`);
  });

  await check("about credits Home Assistant intents (CC BY 4.0)", async () => {
    await page.click("#about");
    await page.waitForSelector("#about-dialog[open]");
    const text = await page.textContent("#about-dialog");
    for (const want of ["Home Assistant intents", "CC BY 4.0", "github.com/OHF-Voice/intents"]) {
      if (!text.includes(want)) throw new Error(`about does not say ${want}: ${text}`);
    }
    await page.click("#about-close");
    await page.waitForSelector("#about-dialog:not([open])", { state: "attached" });
  });

  await check("say go to the kitchen, approve, the robot moves and the task finishes", async () => {
    const before = (await state(page)).snap.robot.pose;
    await page.fill("#say", "go to the kitchen");
    await page.press("#say", "Enter");
    await page.waitForSelector("[data-review]", { timeout: 15000 });
    await page.click("[data-review]");
    await page.waitForSelector("#approval-dialog[open]");
    await page.click("#ad-approve");
    await page.waitForSelector("#tasks li.st-succeeded", { timeout: 60000 });
    const s = await state(page);
    const after = s.snap.robot.pose;
    if (Math.hypot(after.x - before.x, after.y - before.y) < 1) throw new Error(`the robot did not move: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
    if (s.snap.robot.zone !== "kitchen") throw new Error(`ended in ${s.snap.robot.zone}`);
    const text = await page.textContent("#decisions");
    if (!/FINISH/.test(text)) throw new Error(`no FINISH decision shown: ${text}`);
    await page.screenshot({ path: join(artifacts, "serve.png") });
  });

  await check("the page reconnects after the server restarts", async () => {
    const port = new URL(url).port;
    const oldThread = (await state(page)).thread;
    child.kill("SIGTERM");
    await page.waitForSelector("#conn.down", { timeout: 10000 });
    ({ child, url } = await serve(`127.0.0.1:${port}`));
    await page.waitForSelector("#conn.up", { timeout: 15000 });
    await page.waitForFunction((t) => window.robobrain.state().thread !== t && window.robobrain.state().snap, oldThread, { timeout: 10000 });
  });

  await check("a read-only viewer cannot approve", async () => {
    const viewer = await browser.newPage();
    viewer.on("pageerror", (e) => console.log(`viewer error: ${e}`));
    await viewer.goto(`${url}?role=viewer`);
    try {
      await viewer.waitForSelector("#conn.up", { timeout: 10000 });
    } catch (e) {
      throw new Error(`the viewer did not connect (${await viewer.textContent("#conn")}; ${url}): ${e.message}`);
    }
    await page.fill("#say", "去厨房");
    await page.press("#say", "Enter");
    await viewer.waitForFunction(() => window.robobrain.state().approvals.size > 0, null, { timeout: 15000 });
    if (await viewer.$("[data-review]")) throw new Error("a viewer is offered the review button");
    const id = await viewer.evaluate(() => [...window.robobrain.state().approvals.keys()][0]);
    await viewer.evaluate((a) => window.robobrain.send(JSON.stringify({ cmd: "approve", approval_id: a })), id);
    await viewer.waitForFunction(() => /refused/.test(document.getElementById("notice").textContent), null, { timeout: 5000 });
    await new Promise((r) => setTimeout(r, 500));
    const still = await page.evaluate((a) => window.robobrain.state().approvals.has(a), id);
    if (!still) throw new Error("the approval went away after a viewer's approve");
    await viewer.screenshot({ path: join(artifacts, "viewer.png") });
  });
  await check("typing never approves; a click after the guard does", async () => {
    const outside = () => page.evaluate(() => [...window.robobrain.state().approvals.values()].find((a) => a.op.args?.zone === "outside")?.approval_id);
    // The server's own view, not the page's: is `id` still waiting?
    const pending = async (id) => (await (await fetch(`${url}api/snapshot`)).json()).approvals.some((a) => a.approval_id === id);
    const answered = (id) => page.evaluate((a) => window.robobrain.state().log.filter((l) => l.kind === "approval" && l.text.startsWith(`${a} `) && !/ requested:/.test(l.text)).map((l) => l.text), id);
    await page.fill("#say", "go outside");
    await page.press("#say", "Enter");
    await page.focus("#say");
    const tokens = ["patrol", "yes", "approve", "a", "Enter", "y"];
    let id;
    for (let r = 0; r < tokens.length; r++) {
      const order = [...tokens.slice(r), ...tokens.slice(0, r)];
      let line = "";
      for (const t of order) {
        if (t === "Enter") {
          await page.keyboard.press("Enter");
          line = "";
        } else {
          // The first round is typed as the approval arrives.
          await page.keyboard.type(t, { delay: r === 0 ? 60 : 0 });
          line += t;
        }
        const value = await page.inputValue("#say");
        if (value !== line) throw new Error(`after ${order.join(" ")}: the chat holds ${JSON.stringify(value)}, not ${JSON.stringify(line)}`);
      }
      id ??= await outside();
      await page.fill("#say", "");
    }
    id ??= await page.waitForFunction(() => [...window.robobrain.state().approvals.values()].find((a) => a.op.args?.zone === "outside")?.approval_id, null, { timeout: 15000 }).then((h) => h.jsonValue());
    if (await page.$("#approval-dialog[open]")) throw new Error("the dialog opened by itself");
    if (!(await pending(id))) throw new Error(`${id} is no longer waiting after typing: ${await answered(id)}`);
    await page.click(`[data-review="${id}"]`, { timeout: 10000 }).catch(async (e) => {
      throw new Error(`${e.message}\nthe approvals panel: ${await page.innerHTML("#approvals")}`);
    });
    await page.waitForSelector("#approval-dialog[open]");
    // Inside the guard the buttons are disabled; a forced click is refused too.
    if (!(await page.isDisabled("#ad-approve"))) throw new Error("approve is enabled as the card opens");
    await page.click("#ad-approve", { force: true });
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => !document.getElementById("ad-approve").disabled, null, { timeout: 5000 });
    // Enter or Space on the focused button is not a click.
    await page.focus("#ad-approve");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Space");
    const hint = await page.textContent("#ad-error");
    if (!/with a click/.test(hint)) throw new Error(`no hint after Enter on approve: ${hint}`);
    await new Promise((r) => setTimeout(r, 500));
    if (!(await pending(id))) throw new Error(`${id} was answered by a key: ${await answered(id)}`);
    await page.click("#ad-approve");
    await page.waitForFunction((a) => !window.robobrain.state().approvals.has(a), id, { timeout: 10000 });
    const got = await answered(id);
    if (!got.some((t) => t.startsWith(`${id} approved`))) throw new Error(`not approved: ${got}`);
    if (await pending(id)) throw new Error(`the server still waits for ${id}`);
  });
} finally {
  await browser.close();
  for (const s of servers) s.kill("SIGTERM");
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
