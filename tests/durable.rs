//! Durable execution end to end: `robobrain sim --listen` and the brain as
//! separate processes, the brain SIGKILLed at chosen and random moments and
//! resumed on the same thread each time (seed 003 §11.1 #6).
//!
//! `ROBOBRAIN_KILLS` (default 30, what CI runs; `./x soak` runs 200) sets
//! the number of kills and `ROBOBRAIN_KILL_SEED` replays a run. The seed is
//! printed at the start, written beside the run's files (kept when it
//! fails), and named by every failure.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use robobrain_core::config::Config;
use robobrain_core::rng::SplitMix64;
use robobrain_core::store::{LedgerStatus, Store, Synchronous};
use serde_json::Value;

use crate::sim_process::SimProcess;
use crate::support::temp_dir;

mod power_loss;

pub(crate) const THREAD: &str = "kill-test";
const SPEED: &str = "20";

/// One brain process and the JSON events it prints.
pub(crate) struct Brain {
    pub(crate) child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
}

impl Brain {
    fn start(url: &str, db: &Path, resume: bool, say: &[&str]) -> Self {
        Self::start_at(url, db, SPEED, resume, say)
    }

    /// `robobrain headless --robot URL --thread THREAD --speed SPEED --db DB [--resume]`.
    pub(crate) fn start_at(url: &str, db: &Path, speed: &str, resume: bool, say: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_robobrain"));
        cmd.args([
            "headless", "--robot", url, "--thread", THREAD, "--speed", speed,
        ]);
        Self::spawn(cmd, db, resume, say)
    }

    /// `robobrain [global…] headless --robot URL --thread THREAD --speed SPEED --db DB`.
    pub(crate) fn start_with(
        url: &str,
        db: &Path,
        speed: &str,
        global: &[&str],
        say: &[&str],
    ) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_robobrain"));
        cmd.args(global).args([
            "headless", "--robot", url, "--thread", THREAD, "--speed", speed,
        ]);
        Self::spawn(cmd, db, false, say)
    }

    fn spawn(mut cmd: Command, db: &Path, resume: bool, say: &[&str]) -> Self {
        cmd.arg("--db")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if resume {
            cmd.arg("--resume");
        }
        for s in say {
            cmd.args(["--say", s]);
        }
        let mut child = cmd.spawn().unwrap();
        // Read stderr as it comes (a full pipe would block the brain);
        // ROBOBRAIN_TEST_STDERR=1 shows it.
        if let Some(stderr) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { return };
                    if std::env::var_os("ROBOBRAIN_TEST_STDERR").is_some() {
                        eprintln!("brain: {line}");
                    }
                }
            });
        }
        let lines = crate::support::json_lines(child.stdout.take().unwrap());
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "{line}");
            let _ = stdin.flush();
        }
    }

    /// Reads events until `stop` holds for one (approving any approval
    /// prompt when `approve`), or `timeout` passes. Returns the event it held for.
    pub(crate) fn wait_for(
        &mut self,
        timeout: Duration,
        approve: bool,
        stop: &dyn Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(ev) => {
                    if approve && is_approval_request(&ev) {
                        let id = ev["approval_id"].as_str().unwrap_or_default().to_string();
                        self.send(&format!(r#"{{"cmd":"approve","approval_id":"{id}"}}"#));
                    }
                    if stop(&ev) {
                        return Some(ev);
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    pub(crate) fn kill(mut self) {
        // SIGKILL: no destructor, no last commit, no goodbye to the robot.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn is_approval_request(ev: &Value) -> bool {
    ev["kind"] == "approval" && ev["status"] == "requested"
}

fn is_resumed(ev: &Value) -> bool {
    ev["kind"] == "log"
        && ev["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("resumed thread"))
}

/// What to wait for before a kill.
#[derive(Debug, Clone, Copy)]
enum Moment {
    Dispatch,
    Navigation,
    Charging,
    Random,
}

fn matches(moment: Moment, ev: &Value) -> bool {
    match moment {
        Moment::Dispatch => ev["kind"] == "skill" && ev["status"] == "dispatched",
        Moment::Navigation => {
            ev["kind"] == "skill" && ev["skill"] == "navigate_to" && ev["status"] == "feedback"
        }
        Moment::Charging => ev["kind"] == "telemetry" && ev["charging"] == true,
        Moment::Random => false,
    }
}

/// Names the seed when the soak fails, wherever it fails, and keeps the
/// run's folder (database, the robot's goal record, the seed) to look at.
struct SeedGuard {
    seed: u64,
    dir: PathBuf,
}

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "the kill soak failed with seed {seed}: replay it with ROBOBRAIN_KILL_SEED={seed}; \
                 its files are kept in {}",
                self.dir.display(),
                seed = self.seed
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn pending_approval(db: &Path) -> Option<String> {
    // The brain that wrote it is dead; the file is read as it was left.
    let store = Store::open(db, Synchronous::Normal).unwrap();
    store.thread(THREAD).unwrap().pending_approval
}

#[test]
fn a_brain_killed_at_random_moments_resumes_without_repeating_a_side_effect() {
    let kills: usize = std::env::var("ROBOBRAIN_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    // The approval prompt three times, then the targeted moments, then at
    // least as many random ones.
    assert!(
        kills >= 12,
        "ROBOBRAIN_KILLS must be at least 12, found {kills}"
    );
    let seed: u64 = std::env::var("ROBOBRAIN_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!(
        "kill test: seed {seed}, {kills} kills (ROBOBRAIN_KILL_SEED={seed} replays the kill times)"
    );
    let mut rng = SplitMix64::new(seed);
    let dir = temp_dir("durable-kill");
    std::fs::write(dir.join("seed.txt"), format!("{seed}\n")).unwrap();
    let guard = SeedGuard {
        seed,
        dir: dir.clone(),
    };
    let (db, record): (PathBuf, PathBuf) = (dir.join("brain.db"), dir.join("goals.jsonl"));
    let _ = std::fs::remove_file(&db);
    let sim = SimProcess::start(&record, SPEED, &[]);
    let wait = Duration::from_secs(20);

    // 1. Going outside needs approval: kill while it waits, twice.
    let mut brain = Brain::start(&sim.url, &db, false, &["去门外"]);
    assert!(
        brain.wait_for(wait, false, &is_approval_request).is_some(),
        "no approval prompt"
    );
    brain.kill();
    let pending = pending_approval(&db).expect("the approval is pending after a kill");
    for _ in 0..2 {
        let mut brain = Brain::start(&sim.url, &db, true, &[]);
        assert!(
            brain.wait_for(wait, false, &is_resumed).is_some(),
            "no resume line"
        );
        let shown = brain
            .wait_for(wait, false, &is_approval_request)
            .expect("the prompt again after a restart");
        assert_eq!(
            shown["approval_id"].as_str(),
            Some(pending.as_str()),
            "the same prompt after a restart"
        );
        brain.kill();
        assert_eq!(pending_approval(&db).as_deref(), Some(pending.as_str()));
    }

    // 2. Approve and drop the battery (charging preempts the outing, which
    // then resumes and asks again); kill at the moments
    // that matter and at random ones, resuming each time.
    let mut brain = Brain::start(&sim.url, &db, true, &[]);
    brain.send(&format!(r#"{{"cmd":"approve","approval_id":"{pending}"}}"#));
    brain.send(r#"{"cmd":"inject","fault":{"fault":"set_battery","pct":19}}"#);
    let mut moments = vec![
        Moment::Charging,
        Moment::Charging,
        Moment::Dispatch,
        Moment::Navigation,
    ];
    let mut killed = 3;
    let mut log = vec!["WaitingApproval"; 3];
    while killed < kills {
        let moment = if moments.is_empty() {
            Moment::Random
        } else {
            moments.remove(0)
        };
        let delay = Duration::from_millis(50 + rng.next_u64() % 700);
        if matches!(moment, Moment::Random) && killed % 3 == 0 {
            // Keep the robot busy: a soak of many kills needs work to interrupt.
            let zones = ["去厨房", "去卧室", "去客厅"];
            brain.send(zones[(killed / 3) % zones.len()]);
        }
        match moment {
            Moment::Random => {
                brain.wait_for(delay, true, &|_| false);
            }
            m => assert!(
                brain
                    .wait_for(Duration::from_secs(60), true, &|ev| matches(m, ev))
                    .is_some(),
                "kill {}: the moment {m:?} never came (seed {seed})",
                killed + 1
            ),
        }
        brain.kill();
        killed += 1;
        log.push(match moment {
            Moment::Charging => "Charging",
            Moment::Dispatch => "Dispatch",
            Moment::Navigation => "Navigation",
            Moment::Random => "Random",
        });
        brain = Brain::start(&sim.url, &db, true, &[]);
        assert!(
            brain.wait_for(wait, true, &is_resumed).is_some(),
            "no resume line after kill {killed}"
        );
    }
    eprintln!("kills: {}", log.join(", "));
    // Every targeted moment was hit (not only waited for): the approval
    // prompt, charging, a dispatch and a navigation under way.
    for moment in ["WaitingApproval", "Charging", "Dispatch", "Navigation"] {
        assert!(
            log.contains(&moment),
            "{moment} was never hit (seed {seed}): {log:?}"
        );
    }
    assert_eq!(log.len(), kills, "seed {seed}");
    // 3. Let the last brain finish: answer its prompts until the thread is
    // idle, then close stdin; headless stops once idle.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        brain.wait_for(Duration::from_millis(200), true, &|_| false);
        let t = Store::open(&db, Synchronous::Normal)
            .unwrap()
            .thread(THREAD)
            .unwrap();
        if t.status == "idle" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the thread never settled (seed {seed}): {t:?}"
        );
    }
    brain.stdin = None;
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = brain.child.try_wait().unwrap() {
            break status;
        }
        brain.wait_for(Duration::from_millis(100), false, &|_| false);
        assert!(
            Instant::now() < deadline,
            "the last run did not stop (seed {seed})"
        );
    };
    assert!(status.success(), "the last run failed: {status}");

    // The task completed.
    let store = Store::open(&db, Config::default().store.synchronous).unwrap();
    let thread = store.thread(THREAD).unwrap();
    assert_eq!(thread.status, "finished", "{thread:?}");
    let events = store.events(THREAD).unwrap();
    let finished: BTreeSet<String> = events
        .iter()
        .filter_map(|e| {
            let v = e.to_json();
            (v["kind"] == "task" && v["task"]["status"] == "succeeded")
                .then(|| v["task"]["id"].to_string())
        })
        .collect();
    assert!(
        finished.len() >= 2,
        "the charge and the outing both succeed: {finished:?}"
    );
    // The event log: numbered 1…n with no gap or repeat, steps never go back.
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "event numbers have a gap or a repeat");
    }
    assert!(
        events.windows(2).all(|w| w[0].step <= w[1].step),
        "a step went back"
    );
    // The simulator's own record: no ledger key was ever sent twice. (A
    // stop the robot's dead-man made — a brain slower than `deadman_s` to
    // come back on a loaded machine — is the robot's, not a brain's.)
    let text = std::fs::read_to_string(&record).unwrap();
    let mut seen = BTreeSet::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["by"] == "deadman" {
            eprintln!("the dead-man stopped the base once: {v}");
            continue;
        }
        let id = v["goal_id"].as_str().unwrap().to_string();
        assert!(
            seen.insert(id.clone()),
            "goal {id} reached the robot twice (seed {seed})\n{text}"
        );
    }
    assert!(seen.len() >= 3, "a multi-step task: {seen:?}");
    // Every goal the robot received is in the ledger, and all are done.
    let ledger = store.ledger(THREAD).unwrap();
    for id in &seen {
        let row = ledger.iter().find(|l| &l.goal_id == id);
        assert!(
            row.is_some_and(|l| l.status == LedgerStatus::Done),
            "{id}: {row:?}"
        );
    }
    drop(sim);
    drop(guard);
}

/// The demo records its thread when asked to, the thread ends `finished`,
/// and the same thread id is not silently overwritten by a second run.
#[test]
fn a_recorded_demo_ends_finished_and_its_thread_is_not_overwritten() {
    let dir = temp_dir("durable-demo");
    let db = dir.join("threads.db");
    let db = db.to_str().unwrap();
    let args = ["demo", "--fast", "--thread", "demo-1", "--db", db];
    let first = crate::support::robobrain(&args, "");
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    assert!(first.stderr.contains("thread demo-1: recording in"));
    let listed = crate::support::robobrain(&["threads", "--db", db], "");
    let row = listed
        .stdout
        .lines()
        .find(|l| l.starts_with("demo-1 "))
        .unwrap_or_else(|| panic!("no demo-1 row in:\n{}", listed.stdout));
    assert!(row.contains("finished") && row.contains("IDLE"), "{row}");
    let again = crate::support::robobrain(&args, "");
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("thread `demo-1` already exists"),
        "{}",
        again.stderr
    );
    let refused = crate::support::robobrain(&["demo", "--thread", "demo-1", "--resume"], "");
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("--resume and --robot work with"));
}
