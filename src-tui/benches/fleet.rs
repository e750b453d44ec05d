//! A fleet on one broker (whole-run, percentiles printed;
//! docs/benchmarks/fleet.md). With the release binary:
//!
//! 1. `robobrain fleet up` for 10, 20 and 30 robots: the time until every
//!    robot is visible, as `fleet up` prints it.
//! 2. `fleet up --robots 100 --say patrol` (every robot a `headless`
//!    process at 1× real time, patrolling in rounds every
//!    [`PATROL_INTERVAL_S`]), five more brains patrolling the
//!    same world with no `[fleet]` (they publish nothing), the real
//!    `robobrain fleet` console in tmux, and an operator connection in this
//!    process that reads what the console reads; and the page's server,
//!    `robobrain serve --fleet`, with ten page connections (WebSockets), each
//!    following one robot as a page that opened it does. Measured over the
//!    window: each event's time from its `wall_ms` (stamped when the kernel
//!    emitted it) to its arrival here — through the console's client, and
//!    through the page's server and its WebSocket — as p50/p99/max; the
//!    console's, the page server's, the broker's and the brains' CPU (from
//!    `/proc`, over the window) and RSS; each brain's kernel tick p99
//!    (`headless --ticks`), the publishing brains' against the silent ones'.
//!
//! Run: `cargo build --release --bin robobrain && cargo bench -p
//! robobrain-tui --bench fleet`. `ROBOBRAIN_BIN` names another binary;
//! `ROBOBRAIN_BENCH_FLEET_ROBOTS` (100), `ROBOBRAIN_BENCH_FLEET_CURVE`
//! ("10,20,30", empty for none) and `ROBOBRAIN_BENCH_SECONDS` (60, the
//! measured window) change the run.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../src-core/benches/figures.rs"]
mod figures;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use robobrain_core::fleet::{ClientEvent, FleetClient, FleetView};
use robobrain_core::runtime::TickSummary;
use tokio_tungstenite::tungstenite::Message;

/// Seconds between patrol rounds (`PATROL_INTERVAL`, docs/patrol.md): a
/// round of the apartment takes about a minute at 1× real time, so without
/// rounds the robots would go idle inside the measured window; with them a
/// robot that has finished starts again within this long.
const PATROL_INTERVAL_S: &str = "10";

/// Brains that patrol like the fleet's but publish nothing.
const SILENT: usize = 5;
/// Page connections to `serve --fleet`, each following one robot.
const PAGES: usize = 10;
/// Seconds after every robot is visible before the window opens.
const WARM_UP: Duration = Duration::from_secs(10);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn binary() -> PathBuf {
    let bin = std::env::var_os("ROBOBRAIN_BIN").map_or_else(
        || {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| PathBuf::from("../target"), PathBuf::from);
            target.join("release/robobrain")
        },
        PathBuf::from,
    );
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build --release --bin robobrain` (or set ROBOBRAIN_BIN)",
        bin.display()
    );
    bin
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wall_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// `NAME.toml` in `dir`: the fleet's robots' settings (memory off, text
/// voice) without `[fleet]`, its runs in `dir/NAME`.
fn config(dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "runs_dir = {:?}\n\n[memory]\nenabled = false\n\n[speech]\nvoice = \"text\"\n",
            dir.join(name).display().to_string()
        ),
    )
    .unwrap();
    file
}

/// Runs `fleet up` and returns the seconds it says every robot took to be visible.
fn fleet_up(bin: &Path, config: &Path, dir: &Path, robots: usize, port: u16, say: &[&str]) -> f64 {
    let out = Command::new(bin)
        .arg("--config")
        .arg(config)
        .args(["fleet", "up", "--robots", &robots.to_string()])
        .args(["--port", &port.to_string(), "--dir"])
        .arg(dir)
        .args(say.iter().flat_map(|s| ["--say", s]))
        // Inherited by every robot fleet up starts.
        .env("PATROL_INTERVAL", PATROL_INTERVAL_S)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fleet up: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "fleet up: N robots visible on URL after X s (…)"
    let after = text
        .split(" after ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|x| x.parse().ok());
    after.unwrap_or_else(|| panic!("fleet up said no time: {text}"))
}

fn fleet_down(bin: &Path, dir: &Path) {
    let status = Command::new(bin)
        .args(["fleet", "down", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "fleet down failed");
}

/// The PIDs `fleet up` wrote: the broker's and the robots'.
fn fleet_pids(dir: &Path) -> (u32, Vec<u32>) {
    let text = std::fs::read_to_string(dir.join("pids")).unwrap();
    let mut broker = 0;
    let mut robots = Vec::new();
    for (name, pid) in text.lines().filter_map(|l| l.split_once(' ')) {
        let pid = pid.trim().parse().unwrap();
        if name == "broker" {
            broker = pid;
        } else {
            robots.push(pid);
        }
    }
    (broker, robots)
}

/// Adds the bench's own observer to the broker `fleet up` started in `dir`
/// (pid `broker`) and returns its password file. The broker gives every
/// connection its user's name as its client id (`use_username_as_clientid`,
/// docs/fleet.md), so two connections of one user take each other's place:
/// the console logs in as `operator`, the page's server as `page`, and
/// this observer needs a user of its own — added as docs/fleet.md says
/// (`mosquitto_passwd`), with read access in the ACL, and the broker told
/// to read both again (SIGHUP).
fn add_observer(dir: &Path, broker: u32) -> PathBuf {
    use std::io::Write;
    let password = "bench-observer";
    let status = Command::new("mosquitto_passwd")
        .arg("-b")
        .arg(dir.join("passwd"))
        .args([OBSERVER, password])
        .status()
        .expect("mosquitto_passwd runs (./x setup installs mosquitto)");
    assert!(status.success(), "mosquitto_passwd failed");
    let mut acl = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("acl"))
        .unwrap();
    writeln!(
        acl,
        "\nuser {OBSERVER}\ntopic read robobrain/#\ntopic read uagv/#"
    )
    .unwrap();
    let status = Command::new("kill")
        .args(["-HUP", &broker.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "the broker did not take SIGHUP");
    let file = dir.join("observer.password");
    std::fs::write(&file, password).unwrap();
    file
}

/// The bench observer's user on the broker ([`add_observer`]).
const OBSERVER: &str = "observer";

/// A process's CPU time so far (user + system), from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = fields
        .get(11..13)
        .map_or(0, |f| f.iter().map(|x| x.parse::<u64>().unwrap_or(0)).sum());
    // The kernel's USER_HZ, 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// A process's resident set now, in MiB (`VmRSS`).
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The `robobrain` process in tmux session `name`'s pane (the pane's
/// process itself, or its child when a shell runs it).
fn pane_robobrain(name: &str) -> u32 {
    let out = Command::new("tmux")
        .args(["list-panes", "-t", name, "-F", "#{pane_pid}"])
        .output()
        .unwrap();
    let pane: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm(pane).trim() == "robobrain" {
        return pane;
    }
    let children =
        std::fs::read_to_string(format!("/proc/{pane}/task/{pane}/children")).unwrap_or_default();
    children
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .find(|&c| comm(c).trim() == "robobrain")
        .unwrap_or(pane)
}

/// `robobrain serve --fleet URL` as the operator, and its address (what it
/// prints on stderr once it serves).
fn serve_fleet(bin: &Path, config: &Path, url: &str, password: &Path) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(bin)
        .arg("--config")
        .arg(config)
        .args(["serve", "--listen", "127.0.0.1:0", "--fleet", url])
        // The page's own login, as `fleet up` prints it (see `add_observer`).
        .args(["--user", "page", "--password-file"])
        .arg(password)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("serve --fleet ended before serving")
            .unwrap();
        if let Some(at) = line.find(" at http://") {
            break line[at + " at http://".len()..]
                .trim_end_matches('/')
                .to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// One page on `serve --fleet` at `addr` that opened `robot`: each event of
/// the robot's it receives, as (arrival, arrival − `wall_ms`) in ms.
async fn page(addr: String, robot: String, seen: Arc<Mutex<Vec<(u64, f64)>>>) {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap();
    let open = serde_json::json!({"op": "open", "robot": robot}).to_string();
    ws.send(Message::text(open)).await.unwrap();
    while let Some(Ok(message)) = ws.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let now = wall_ms();
        let v: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
        if v["type"] == "robot" && v["message"]["type"] == "event" {
            let stamped = v["message"]["event"]["wall_ms"].as_u64().unwrap();
            seen.lock()
                .unwrap()
                .push((now, now.saturating_sub(stamped) as f64));
        }
    }
}

/// Waits (60 s at most) for each file and reads its tick summary.
fn tick_summaries(files: &[PathBuf]) -> Vec<TickSummary> {
    let deadline = Instant::now() + Duration::from_secs(60);
    files
        .iter()
        .filter_map(|f| {
            while !f.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let text = std::fs::read_to_string(f).ok()?;
            serde_json::from_str(&text).ok()
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    figures::percentile(&xs, 0.5)
}

fn main() {
    let bin = binary();
    let robots: usize = env_or("ROBOBRAIN_BENCH_FLEET_ROBOTS", 100);
    let seconds: u64 = env_or("ROBOBRAIN_BENCH_SECONDS", 60);
    let curve: String = env_or("ROBOBRAIN_BENCH_FLEET_CURVE", "10,20,30".to_string());
    let root = std::env::temp_dir().join(format!("rb-bench-fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let config = config(&root, "base");

    for n in curve
        .split(',')
        .filter_map(|n| n.trim().parse::<usize>().ok())
    {
        let dir = root.join(format!("up-{n}"));
        let took = fleet_up(&bin, &config, &dir, n, free_port(), &[]);
        fleet_down(&bin, &dir);
        println!("fleet up --robots {n}: all visible after {took:.2} s");
        figures::record(
            &format!("fleet.up_{n}"),
            &format!("fleet up --robots {n} → all visible"),
            took,
            "s",
        );
    }

    // The fleet, patrolling.
    let port = free_port();
    let dir = root.join(format!("fleet-{robots}"));
    let took = fleet_up(&bin, &config, &dir, robots, port, &["patrol"]);
    println!("fleet up --robots {robots}: all visible after {took:.2} s");
    figures::record(
        &format!("fleet.up_{robots}"),
        &format!("fleet up --robots {robots} → all visible"),
        took,
        "s",
    );
    let (broker, brains) = fleet_pids(&dir);
    let observer = add_observer(&dir, broker);
    // Brains that publish nothing, on the same world and settings.
    let silent_ticks: Vec<PathBuf> = (1..=SILENT)
        .map(|i| root.join(format!("silent-{i}.json")))
        .collect();
    let mut silent: Vec<Child> = silent_ticks
        .iter()
        .enumerate()
        .map(|(i, ticks)| {
            Command::new(&bin)
                .arg("--config")
                .arg(self::config(&root, &format!("silent-{i}")))
                .args(["headless", "--say", "patrol", "--ticks"])
                .arg(ticks)
                .env("PATROL_INTERVAL", PATROL_INTERVAL_S)
                // Kept open: the run goes on until the signal.
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // The real console, on a terminal.
    let url = format!("mqtt://127.0.0.1:{port}");
    let password = dir.join("operator.password");
    let session = format!("rb-bench-fleet-{}", std::process::id());
    let console_cmd = format!(
        "{} --config {} fleet --broker {url} --user operator --password-file {}",
        bin.display(),
        config.display(),
        password.display()
    );
    let status = Command::new("tmux")
        .args(["new-session", "-d", "-s", &session, "-x", "160", "-y", "50"])
        .arg(&console_cmd)
        .status()
        .expect("tmux runs (./x setup installs it)");
    assert!(status.success(), "tmux new-session failed");
    let console = pane_robobrain(&session);
    // The page's server on the same broker.
    let (mut server, addr) = serve_fleet(&bin, &config, &url, &dir.join("page.password"));
    let page_seen = Arc::new(Mutex::new(Vec::new()));

    // This process reads what the console reads, as the operator.
    let mqtt = robobrain_core::fleet::connection(&url, Some(OBSERVER), None, Some(&observer), None)
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (latencies, events, window) = rt.block_on(async {
        for i in 1..=PAGES.min(robots) {
            tokio::spawn(page(
                addr.clone(),
                format!("robot-{i}"),
                Arc::clone(&page_seen),
            ));
        }
        let mut client = FleetClient::connect(&mqtt);
        let mut view = FleetView::default();
        let warm_until = Instant::now() + WARM_UP;
        while Instant::now() < warm_until {
            if let Ok(Ok(event)) =
                tokio::time::timeout(Duration::from_millis(100), client.recv()).await
            {
                view.apply(&event);
            }
        }
        let start = Instant::now();
        let start_ms = wall_ms();
        let end = start + Duration::from_secs(seconds);
        let mut latencies = Vec::new();
        let mut events = 0usize;
        let cpu_before: Vec<Duration> = [console, broker, server.id()]
            .iter()
            .chain(&brains)
            .map(|&p| cpu_time(p))
            .collect();
        while let Ok(Ok(event)) = tokio::time::timeout_at(end.into(), client.recv()).await {
            if let ClientEvent::Event { event: e, .. } = &event {
                events += 1;
                latencies.push(wall_ms().saturating_sub(e.wall_ms) as f64);
            }
            view.apply(&event);
        }
        let end_ms = wall_ms();
        let cpu_after: Vec<Duration> = [console, broker, server.id()]
            .iter()
            .chain(&brains)
            .map(|&p| cpu_time(p))
            .collect();
        client.close().await;
        let used: Vec<f64> = cpu_after
            .iter()
            .zip(&cpu_before)
            .map(|(a, b)| (a.saturating_sub(*b)).as_secs_f64())
            .collect();
        // The pages' events that arrived in the window.
        page_seen
            .lock()
            .unwrap()
            .retain(|&(at, _)| (start_ms..=end_ms).contains(&at));
        (latencies, events, (start.elapsed().as_secs_f64(), used))
    });
    let (elapsed, used) = window;
    let pct = |cpu: f64| 100.0 * cpu / elapsed;
    let (console_rss, broker_rss, server_rss) =
        (rss_mib(console), rss_mib(broker), rss_mib(server.id()));
    let brains_rss: Vec<f64> = brains.iter().map(|&p| rss_mib(p)).collect();
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
    let _ = server.kill();
    let _ = server.wait();
    fleet_down(&bin, &dir);
    for child in &silent {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
    }
    for child in &mut silent {
        let _ = child.wait();
    }
    let fleet_ticks = tick_summaries(
        &(1..=robots)
            .map(|i| dir.join(format!("robot-{i}/ticks.json")))
            .collect::<Vec<_>>(),
    );
    let silent_ticks = tick_summaries(&silent_ticks);
    assert!(
        !fleet_ticks.is_empty() && !silent_ticks.is_empty(),
        "no tick summaries: robots {}/{robots}, silent {}/{SILENT}",
        fleet_ticks.len(),
        silent_ticks.len()
    );

    println!(
        "{robots} robots, {events} events in {elapsed:.1} s ({:.0}/s) seen by the operator",
        events as f64 / elapsed
    );
    figures::record(
        "fleet.events_per_s",
        "events a second reaching the console",
        events as f64 / elapsed,
        "/s",
    );
    report_latency(
        "event → console",
        "fleet.event_to_console",
        &format!("event emitted → console's client, {robots} robots"),
        &latencies,
    );
    let brains_cpu: f64 = used[3..].iter().sum();
    println!(
        "console: {:.1} % CPU, {console_rss:.1} MiB; broker: {:.1} % CPU, {broker_rss:.1} MiB; \
         brains: {:.0} % CPU in all, {:.1} MiB each (median)",
        pct(used[0]),
        pct(used[1]),
        pct(brains_cpu),
        median(brains_rss.clone())
    );
    figures::record("fleet.console_cpu", "fleet console CPU", pct(used[0]), "%");
    figures::record("fleet.console_rss", "fleet console RSS", console_rss, "MiB");
    figures::record("fleet.broker_cpu", "mosquitto CPU", pct(used[1]), "%");
    figures::record("fleet.broker_rss", "mosquitto RSS", broker_rss, "MiB");
    figures::record("fleet.brains_cpu", "all brains' CPU", pct(brains_cpu), "%");
    figures::record(
        "fleet.brain_rss",
        "one brain's RSS (median)",
        median(brains_rss),
        "MiB",
    );
    let p99 = |s: &[TickSummary]| median(s.iter().map(|t| t.p99_us).collect());
    let p50 = |s: &[TickSummary]| median(s.iter().map(|t| t.p50_us).collect());
    let (fleet_p99, silent_p99) = (p99(&fleet_ticks), p99(&silent_ticks));
    println!(
        "tick p99 (median over brains): publishing {fleet_p99:.0} µs ({} brains), silent \
         {silent_p99:.0} µs ({} brains): ratio {:.2}; p50 {:.0} vs {:.0} µs",
        fleet_ticks.len(),
        silent_ticks.len(),
        fleet_p99 / silent_p99,
        p50(&fleet_ticks),
        p50(&silent_ticks)
    );
    figures::record(
        "fleet.tick_p99.fleet",
        "a publishing brain's tick p99 (median over brains)",
        fleet_p99,
        "µs",
    );
    figures::record(
        "fleet.tick_p99.silent",
        "a silent brain's tick p99 (median over brains)",
        silent_p99,
        "µs",
    );
    figures::record(
        "fleet.tick_p99.ratio",
        "publishing / silent tick p99",
        fleet_p99 / silent_p99,
        "×",
    );
    // The page last: the figures above are printed even when it fails.
    let page: Vec<f64> = page_seen.lock().unwrap().iter().map(|&(_, l)| l).collect();
    assert!(!page.is_empty(), "no robot's event reached a page");
    report_latency(
        &format!("event → page (serve --fleet, WebSocket; {PAGES} pages each following a robot)"),
        "fleet.event_to_page",
        &format!("event emitted → a page's WebSocket through serve --fleet, {robots} robots"),
        &page,
    );
    println!(
        "page server (serve --fleet, {PAGES} pages): {:.1} % CPU, {server_rss:.1} MiB",
        pct(used[2])
    );
    figures::record(
        "fleet.page_server_cpu",
        "serve --fleet CPU",
        pct(used[2]),
        "%",
    );
    figures::record(
        "fleet.page_server_rss",
        "serve --fleet RSS",
        server_rss,
        "MiB",
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Prints `label`'s p50, p99 and max of `latencies` (ms) and records their
/// spread as the figure `id`, named `name`.
fn report_latency(label: &str, id: &str, name: &str, latencies: &[f64]) {
    let mut sorted = latencies.to_vec();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{label}: p50 {} ms, p99 {} ms, max {} ms ({} events)",
        figures::percentile(&sorted, 0.5),
        figures::percentile(&sorted, 0.99),
        figures::percentile(&sorted, 1.0),
        sorted.len()
    );
    figures::record_spread(id, name, latencies, "ms");
}
