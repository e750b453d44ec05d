//! The E-stop over the real path a recorded run takes (issue 19 §3): a
//! face's command → the kernel → `stop_base` over the TCP link → the robot
//! process (`robobrain sim --listen`), with a store attached — and again
//! with the store failed. Latency is from just before the face sends the
//! command to the robot process's own stamp of receipt in its record (its
//! reader thread's; both clocks are this machine's), p50 / p99 / max over
//! the trials; and, for the first case, until the robot's world loop
//! applied it (between two world steps).
//!
//! Faces: `Runtime::send` (in this process, as the console, `serve` and
//! `mcp` send) and `robobrain headless`'s stdin (a JSON line).
//!
//! Run: `cargo bench -p robobrain-tui --bench estop` (400 trials per case;
//! set `ROBOBRAIN_BENCH_TRIALS` to change).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::link::tcp::TcpLink;
use robobrain_core::protocol::{Command, Origin};
use robobrain_core::runtime::{Pace, Runtime};
use robobrain_core::store::{Store, StoreConfig, Synchronous};
use robobrain_core::world::World;

const BIN: &str = env!("CARGO_BIN_EXE_robobrain");
/// Where the robot is sent before each E-stop, in turn (it is moving when stopped).
const PLACES: [&str; 3] = ["go to the bedroom", "go to the study", "go to the kitchen"];

fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

#[path = "../../tests/sim_process.rs"]
mod sim_process;

#[path = "../../src-core/benches/figures.rs"]
mod figures;

/// The robot process and how far its record has been read.
struct Robot {
    process: sim_process::SimProcess,
    record: PathBuf,
    read: u64,
}

impl Robot {
    fn start(dir: &Path) -> Self {
        let record = dir.join("goals.jsonl");
        Self {
            process: sim_process::SimProcess::start(&record, "1", &[]),
            record,
            read: 0,
        }
    }

    /// Waits for the first E-stop `stop_base` the robot process received at or
    /// after `since` (µs since the epoch); its stamp of receipt. With the
    /// E-stop line the robot gets two stops per E-stop — the line's, then
    /// the kernel's — and the kernel's may land after the trial was read:
    /// it is older than the next trial's `since` and skipped.
    /// Also when its world loop applied it (`wall_us`).
    fn next_estop(&mut self, since: u64) -> (u64, u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut file = std::fs::File::open(&self.record).unwrap();
            file.seek(SeekFrom::Start(self.read)).unwrap();
            let mut text = String::new();
            file.read_to_string(&mut text).unwrap();
            // Only whole lines; a line being written is read next time.
            let whole = text.rfind('\n').map_or(0, |i| i + 1);
            let mut found = None;
            for line in text[..whole].lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let estop = v["goal_id"].as_str().is_some_and(|g| g.contains("/estop"));
                // When the robot process had it (its reader thread's stamp);
                // `wall_us` is when its world loop applied it.
                let applied = v["wall_us"].as_u64().unwrap_or(0);
                let at = v["received_us"].as_u64().unwrap_or(applied);
                if estop && at >= since && found.is_none() {
                    found = Some((at, applied));
                }
            }
            self.read += whole as u64;
            if let Some(at) = found {
                return at;
            }
            assert!(Instant::now() < deadline, "no stop_base reached the robot");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Prints p50 / p99 / max and records them as `estop.{id}.*` (µs).
fn report(id: &str, name: &str, mut us: Vec<f64>) {
    figures::record_spread(&format!("estop.{id}"), name, &us, "µs");
    us.sort_by(f64::total_cmp);
    let p = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name} ({} trials): p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        us.len(),
        p(0.5),
        p(0.99),
        us[us.len() - 1]
    );
}

/// `Runtime::send(EStop)` with a store attached; then with the store failed
/// (its file deleted: the next commit fails and the engine halts).
fn through_runtime(dir: &Path, trials: usize) {
    let mut robot = Robot::start(dir);
    let mut config = Config {
        thread_id: Some("bench-estop".into()),
        ..Config::default()
    };
    config.speech.voice = robobrain_core::voice::VoiceChoice::Text;
    config.memory.enabled = false;
    let world = World::builtin("apartment").unwrap();
    let link = TcpLink::connect(&robot.process.url)
        .unwrap()
        .with_deadman(2.0);
    let mut engine = Engine::new(&config, world, Box::new(link)).unwrap();
    let db = dir.join("runtime.db");
    let _ = std::fs::remove_file(&db);
    engine
        .attach_store(
            Store::open(&db, Synchronous::Normal).unwrap(),
            &StoreConfig::default(),
            false,
        )
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let runtime = Runtime::start(engine, Pace::RealTime { speed: 1.0 });
    let mut trial = |i: usize, failed: bool| -> (f64, f64) {
        if !failed {
            rt.block_on(runtime.send(Command::ResetEStop, Origin::console()))
                .unwrap();
            let text = PLACES[i % PLACES.len()].into();
            rt.block_on(runtime.send(Command::Say { text }, Origin::console()))
                .unwrap();
        }
        std::thread::sleep(Duration::from_millis(30));
        let sent = wall_us();
        rt.block_on(runtime.send(Command::EStop, Origin::console()))
            .unwrap();
        let (received, applied) = robot.next_estop(sent);
        ((received - sent) as f64, (applied - sent) as f64)
    };
    let (attached, applied): (Vec<f64>, Vec<f64>) = (0..trials).map(|i| trial(i, false)).unzip();
    report(
        "runtime.attached",
        "E-stop, Runtime::send → TCP → robot process, store attached",
        attached,
    );
    report(
        "runtime.attached_applied",
        "the same, until the robot's world loop applied it",
        applied,
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    // A navigation makes the next tick commit, which fails on the missing file.
    rt.block_on(runtime.send(Command::ResetEStop, Origin::console()))
        .unwrap();
    rt.block_on(runtime.send(
        Command::Say {
            text: PLACES[0].into(),
        },
        Origin::console(),
    ))
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let failed: Vec<f64> = (0..trials).map(|i| trial(i, true).0).collect();
    report(
        "runtime.failed",
        "E-stop, Runtime::send → TCP → robot process, store failed",
        failed,
    );
    rt.block_on(runtime.shutdown());
}

/// `{"cmd":"estop"}` on `robobrain headless`'s stdin, store attached.
fn through_headless(dir: &Path, trials: usize) {
    let mut robot = Robot::start(dir);
    let db = dir.join("headless.db");
    let _ = std::fs::remove_file(&db);
    let mut brain = Process::new(BIN)
        .args([
            "headless",
            "--robot",
            &robot.process.url,
            "--thread",
            "bench-estop-headless",
        ])
        .arg("--db")
        .arg(&db)
        .arg("--log")
        .arg(dir.join("headless.jsonl"))
        .env("ROBOBRAIN_VOICE", "text")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = brain.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut us = Vec::with_capacity(trials);
    for i in 0..trials {
        writeln!(
            stdin,
            "{{\"cmd\":\"resume\"}}\n{}",
            PLACES[i % PLACES.len()]
        )
        .unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let sent = wall_us();
        stdin.write_all(b"{\"cmd\":\"estop\"}\n").unwrap();
        stdin.flush().unwrap();
        us.push((robot.next_estop(sent).0 - sent) as f64);
    }
    report(
        "headless.attached",
        "E-stop, headless stdin → TCP → robot process, store attached",
        us,
    );
    drop(stdin);
    let _ = brain.kill();
    let _ = brain.wait();
}

fn main() {
    let trials = std::env::var("ROBOBRAIN_BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let dir = std::env::temp_dir().join(format!("robobrain-bench-estop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.trim());
    }
    through_runtime(&dir, trials);
    through_headless(&dir, trials);
    let _ = std::fs::remove_dir_all(&dir);
}
