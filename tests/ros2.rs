//! The ROS 2 link end to end (`--robot ros2://…`, feature `ros2`), against
//! a fake Nav2 robot nobody here wrote the DDS of: tests/fixtures/fake_nav2.py
//! on Eclipse Cyclone DDS (PyPI `cyclonedds`, installed by `./x setup`),
//! RustDDS ↔ Cyclone DDS on loopback. Each test has a domain of its own
//! (held by a socket on a port of that domain), so tests in parallel never
//! see each other's robots.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use robobrain_core::store::{LedgerStatus, Store, Synchronous};
use robobrain_core::world::World;
use serde_json::Value;

use crate::durable::Brain;
use crate::support::{root, temp_dir};

/// The version `./x setup` installs.
const PY_CYCLONEDDS: &str = "11.0.1";
const NAMESPACE: &str = "/robot1";
/// Sim seconds per wall second in the brain (the robot keeps wall time).
const SPEED: &str = "4";
/// The fake's top speed, m/s: with `SPEED` it is the world's 0.6 m/s or so in sim time.
const ROBOT_SPEED: &str = "2.5";

fn python() -> String {
    std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/robobrain/py/bin/python")
    })
}

/// A DDS domain for one test, held while the socket lives.
pub(crate) struct Domain {
    pub(crate) id: u16,
    _hold: UdpSocket,
}

impl Domain {
    /// The first free domain from a start that differs between processes.
    pub(crate) fn take() -> Self {
        let start = (std::process::id() % 200) as u16;
        for i in 0..200u16 {
            let id = 20 + (start + i) % 200;
            // Port 7400 + 250·d + 249: inside the domain's port range, used
            // by no participant with fewer than 119 peers on the machine.
            if let Ok(hold) = UdpSocket::bind(("127.0.0.1", 7400 + 250 * id + 249)) {
                return Self { id, _hold: hold };
            }
        }
        panic!("no free DDS domain between 20 and 219");
    }

    /// `ros2://?domain=…&namespace=/robot1&interface=127.0.0.1`.
    pub(crate) fn url(&self) -> String {
        format!(
            "ros2://?domain={}&namespace={NAMESPACE}&interface=127.0.0.1",
            self.id
        )
    }
}

/// The fake Nav2 robot, started for one test, with what it prints.
pub(crate) struct FakeNav2 {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Value>,
    /// Every goal it received (tests/fixtures/fake_nav2.py `--record`).
    pub(crate) record: PathBuf,
    /// How it was started, for a restart.
    args: (u16, PathBuf, Vec<String>),
}

impl FakeNav2 {
    /// Starts the fake in `domain` at the apartment's start pose, its dock at
    /// the apartment's dock pose, with `extra` arguments.
    pub(crate) fn start(domain: &Domain, dir: &Path, extra: &[&str]) -> Self {
        let world = World::builtin("apartment").unwrap();
        let (s, d) = (world.start_pose, world.dock_pose);
        let record = dir.join("fake_nav2_goals.jsonl");
        // `extra` comes last: argparse keeps the last of a repeated flag.
        let py = python();
        let mut child = Command::new(&py)
            .arg(root().join("tests/fixtures/fake_nav2.py"))
            .args(["--domain", &domain.id.to_string(), "--namespace", NAMESPACE])
            .args(["--start", &format!("{},{}", s.x, s.y)])
            .args(["--dock", &format!("{},{}", d.x, d.y)])
            .args(["--speed", ROBOT_SPEED, "--record"])
            .arg(&record)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run {py}: {e}; run `./x setup` (it creates the test virtualenv)")
            });
        let stdout = child.stdout.take().unwrap();
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        let mut fake = Self {
            stdin: child.stdin.take(),
            child,
            events,
            record,
            args: (
                domain.id,
                dir.to_path_buf(),
                extra.iter().map(ToString::to_string).collect(),
            ),
        };
        if fake
            .wait_for(Duration::from_secs(20), |e| e["event"] == "ready")
            .is_none()
        {
            let _ = fake.child.kill();
            let _ = fake.child.wait();
            let mut stderr = String::new();
            if let Some(mut e) = fake.child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
            }
            panic!(
                "the fake Nav2 did not start: {stderr}\ninstall Cyclone DDS's Python binding with \
                 `~/.cache/robobrain/py/bin/pip install cyclonedds=={PY_CYCLONEDDS}` (./x setup does)"
            );
        }
        fake
    }

    /// The robot's Nav2 restarted: this process killed (SIGKILL, as a crash
    /// does), a new one started with the same arguments and record file. It
    /// knows no goal of the old one.
    pub(crate) fn restart(mut self, domain: &Domain) -> Self {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (id, dir, extra) = self.args.clone();
        assert_eq!(id, domain.id);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        Self::start(domain, &dir, &extra)
    }

    /// Panics if the fake died (a duplicate goal UUID kills it, as it kills
    /// a Nav2 server).
    pub(crate) fn assert_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            let mut stderr = String::new();
            if let Some(mut e) = self.child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
            }
            panic!("the fake Nav2 died ({status}): {stderr}");
        }
    }

    /// Events until one holds `stop`, or `timeout`.
    pub(crate) fn wait_for(
        &self,
        timeout: Duration,
        stop: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(ev) if stop(&ev) => return Some(ev),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Every event until one holds `stop` (included), or `timeout`.
    pub(crate) fn collect(&self, timeout: Duration, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let seen = std::cell::RefCell::new(Vec::new());
        self.wait_for(timeout, |e| {
            seen.borrow_mut().push(e.clone());
            stop(e)
        });
        seen.into_inner()
    }

    /// Writes a command line (`block`, `battery 19`, …) to the fake.
    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The goal ids it received, with how many times each.
    pub(crate) fn goals_received(&self) -> BTreeMap<String, usize> {
        let text = std::fs::read_to_string(&self.record).unwrap_or_default();
        let mut seen = BTreeMap::new();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(
                v.get("conflict").is_none(),
                "navigation and docking drove the base at once: {line}"
            );
            *seen
                .entry(v["goal_id"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
        seen
    }
}

impl Drop for FakeNav2 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the UUID `hex` (as the fake records it) is a send of `goal_id`.
fn is_send_of(hex: &str, goal_id: &str) -> bool {
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    robobrain_core::ros2::uuid_of(&bytes, &robobrain_core::ros2::goal_key(goal_id))
}

fn is_task(ev: &Value, kind: &str, status: &str) -> bool {
    ev["kind"] == "task" && ev["task"]["kind"] == kind && ev["task"]["status"] == status
}

/// Asserts the fake is alive and received no goal UUID twice (across its
/// restarts); the goals it received.
fn no_goal_twice(fake: &mut FakeNav2) -> BTreeMap<String, usize> {
    fake.assert_alive();
    let seen = fake.goals_received();
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "goals the robot received twice: {twice:?}"
    );
    seen
}

/// A test on a fresh fake (started with `extra`) and a brain told to go to
/// the bedroom, once the robot has accepted the navigation goal: the
/// domain, the fake, the brain and the fake's goal event.
fn bedroom_run(name: &str, extra: &[&str]) -> (Domain, FakeNav2, Brain, Value) {
    let dir = temp_dir(name);
    let domain = Domain::take();
    let fake = FakeNav2::start(&domain, &dir, extra);
    let db = dir.join("brain.db");
    let brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["去卧室"]);
    let goal = fake.wait_for(Duration::from_secs(30), |e| {
        e["event"] == "goal" && e["accepted"] == true
    });
    let goal = goal.expect("the robot never got the navigation goal");
    (domain, fake, brain, goal)
}

/// Whether `ev` is a task's end (succeeded or failed).
fn is_end(ev: &Value) -> bool {
    ev["kind"] == "task"
        && ["succeeded", "failed"].contains(&ev["task"]["status"].as_str().unwrap_or(""))
}

/// The brain's first task end within `secs`.
fn task_end(brain: &mut Brain, secs: u64) -> Option<Value> {
    brain.wait_for(Duration::from_secs(secs), false, &is_end)
}

/// The brain's first `reconcile …` line within `secs`.
fn reconcile_note(brain: &mut Brain, secs: u64) -> Option<String> {
    let note = brain.wait_for(Duration::from_secs(secs), false, &|ev| {
        ev["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("reconcile "))
    });
    note.and_then(|n| n["message"].as_str().map(str::to_string))
}

/// A patrol of the apartment's default route on the ROS 2 robot: every
/// waypoint is a Nav2 goal the Cyclone fake accepts, moves to and reports
/// succeeded; the task ends succeeded and no goal reached the robot twice
/// — with every fourth `send_goal`/`get_result` reply lost on the way
/// (the link finds the goal on the status topic, or asks again).
#[test]
fn a_patrol_runs_end_to_end_on_a_cyclone_dds_nav2() {
    let dir = temp_dir("ros2-patrol");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &["--lose-replies", "4"]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["巡逻"]);
    let done = brain.wait_for(Duration::from_secs(120), true, &|ev| {
        is_task(ev, "patrol", "succeeded") || is_task(ev, "patrol", "failed")
    });
    let _ = brain.child.kill();
    let done = done.expect("the patrol never ended");
    assert_eq!(done["task"]["status"], "succeeded", "{done}");
    let seen = no_goal_twice(&mut fake);
    let world = World::builtin("apartment").unwrap();
    let route = world.route("default").unwrap();
    assert!(
        seen.len() >= route.len(),
        "one Nav2 goal per waypoint of {route:?}: {seen:?}"
    );
    assert!(
        fake.wait_for(Duration::from_secs(1), |e| e["event"] == "lost_reply")
            .is_some(),
        "no reply was lost: the test tested nothing"
    );
}

/// An E-stop mid-navigation reaches the robot as a zero twist on
/// `cmd_vel` and a cancel of the running goal; the brain is SAFE.
#[test]
fn an_estop_is_a_zero_twist_and_a_cancel_on_the_robot() {
    let dir = temp_dir("ros2-estop");
    let domain = Domain::take();
    // Slow, so the goal still runs when the E-stop comes on a loaded machine.
    let fake = FakeNav2::start(&domain, &dir, &["--speed", "0.3"]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["去卧室"]);
    assert!(
        fake.wait_for(Duration::from_secs(30), |e| e["event"] == "goal"
            && e["accepted"] == true)
            .is_some(),
        "the robot never got the navigation goal"
    );
    brain.send(r#"{"cmd":"estop"}"#);
    let twist = fake.wait_for(Duration::from_secs(10), |e| e["event"] == "cmd_vel");
    assert_eq!(
        twist.expect("no twist on cmd_vel after the E-stop")["zero"],
        true
    );
    assert!(
        fake.wait_for(Duration::from_secs(10), |e| e["event"] == "result"
            && e["status"] == 5)
            .is_some(),
        "the running goal was not cancelled"
    );
    assert!(
        brain
            .wait_for(Duration::from_secs(10), false, &|ev| ev["kind"] == "mode"
                && ev["to"] == "SAFE")
            .is_some(),
        "the brain is not SAFE"
    );
    let _ = brain.child.kill();
}

/// The brain SIGKILLed at chosen and random moments of a patrol on the
/// ROS 2 robot and resumed each time: the resumed brain asks Nav2 about
/// its goals (the action's status topic, then `get_result`) and adopts a
/// running one or takes a finished one's outcome, exactly as with the
/// simulator. The patrol finishes, every goal the robot received is done in
/// the ledger, and none was received twice. A scaled-down kill soak:
/// `ROBOBRAIN_ROS2_KILLS` (default 4) kills.
#[test]
fn a_brain_killed_mid_patrol_reconciles_with_nav2_and_repeats_no_goal() {
    let kills: u64 = std::env::var("ROBOBRAIN_ROS2_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let dir = temp_dir("ros2-kill");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &[]);
    let db = dir.join("brain.db");
    let _ = std::fs::remove_file(&db);
    let url = domain.url();
    let mut brain = Brain::start_at(&url, &db, SPEED, false, &["巡逻"]);
    let mut rng = robobrain_core::rng::SplitMix64::new(u64::from(std::process::id()));
    for k in 0..kills {
        if k % 2 == 0 {
            // While a goal is under way on the robot.
            assert!(
                brain
                    .wait_for(Duration::from_secs(60), true, &|ev| ev["kind"] == "skill"
                        && ev["skill"] == "navigate_to"
                        && ev["status"] == "feedback")
                    .is_some(),
                "kill {}: no navigation under way",
                k + 1
            );
        } else {
            let delay = Duration::from_millis(200 + rng.next_u64() % 1500);
            brain.wait_for(delay, true, &|_| false);
        }
        brain.kill();
        brain = Brain::start_at(&url, &db, SPEED, true, &[]);
        assert!(
            brain
                .wait_for(Duration::from_secs(30), true, &|ev| ev["kind"] == "log"
                    && ev["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("resumed thread")))
                .is_some(),
            "no resume line after kill {}",
            k + 1
        );
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        brain.wait_for(Duration::from_millis(300), true, &|_| false);
        let t = Store::open(&db, Synchronous::Normal)
            .unwrap()
            .thread(crate::durable::THREAD)
            .unwrap();
        if t.status == "idle" {
            break;
        }
        assert!(Instant::now() < deadline, "the thread never settled: {t:?}");
    }
    brain.kill();
    let store = Store::open(&db, Synchronous::Normal).unwrap();
    let events = store.events(crate::durable::THREAD).unwrap();
    assert!(
        events
            .iter()
            .any(|e| is_task(&e.to_json(), "patrol", "succeeded")),
        "the patrol did not succeed"
    );
    // The resumed brains asked Nav2 and took its word: a goal still
    // running was adopted (it was killed while one ran, at least twice).
    let notes: Vec<String> = events
        .iter()
        .filter_map(|e| {
            let v = e.to_json();
            let m = v["message"].as_str()?;
            m.starts_with("reconcile ").then(|| m.to_string())
        })
        .collect();
    assert!(
        notes
            .iter()
            .any(|m| m.ends_with("still running on the robot")
                || m.ends_with("finished on the robot while the brain was away")),
        "no goal was found on Nav2 by a resumed brain: {notes:?}"
    );
    eprintln!("reconcile notes: {notes:#?}");
    let seen = no_goal_twice(&mut fake);
    let ledger = store.ledger(crate::durable::THREAD).unwrap();
    for uuid in seen.keys() {
        let row = ledger.iter().find(|l| is_send_of(uuid, &l.goal_id));
        assert!(
            row.is_some_and(|l| l.status == LedgerStatus::Done),
            "goal {uuid} on the robot: {row:?}"
        );
    }
    assert!(seen.len() >= 5, "a whole patrol: {seen:?}");
}

/// Nav2 aborts the running goal (FollowPath's 105, failed to make
/// progress: the fake's `block`): the brain sees `blocked`, re-plans, and
/// the next goal gets the robot there.
#[test]
fn a_goal_nav2_aborts_as_blocked_is_replanned() {
    let dir = temp_dir("ros2-blocked");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &[]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["去卧室"]);
    assert!(
        fake.wait_for(Duration::from_secs(30), |e| e["event"] == "goal")
            .is_some(),
        "the robot never got the navigation goal"
    );
    fake.send("block");
    let failed = brain.wait_for(Duration::from_secs(30), false, &|ev| {
        ev["kind"] == "skill" && ev["skill"] == "navigate_to" && ev["status"] == "failed"
    });
    let failed = failed.expect("the aborted goal never failed");
    assert_eq!(failed["error"], "blocked", "{failed}");
    assert!(
        brain
            .wait_for(Duration::from_secs(30), false, &|ev| ev["kind"]
                == "decision"
                && ev["decision_type"] == "REPLAN")
            .is_some(),
        "no re-plan after a blocked goal"
    );
    let done = brain.wait_for(Duration::from_secs(60), false, &|ev| {
        ev["kind"] == "task"
            && ["succeeded", "failed"].contains(&ev["task"]["status"].as_str().unwrap_or(""))
    });
    let _ = brain.child.kill();
    let done = done.expect("the task never ended");
    assert_eq!(done["task"]["status"], "succeeded", "{done}");
    no_goal_twice(&mut fake);
}

/// The robot goes silent mid-goal (its process stopped: no DDS at all)
/// for 5 s, half its DDS lease (Cyclone's default 10 s), and comes back:
/// the link notices anyway (`battery_state` silent for `lost_after`), goes
/// down (the kernel is SAFE), rejoins the domain, comes up, asks Nav2
/// about the goal, adopts it, and the task finishes, with no goal received
/// twice.
#[test]
fn a_robot_lost_and_back_is_safe_then_reconciled() {
    let dir = temp_dir("ros2-lost");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &["--speed", "1"]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["去卧室"]);
    assert!(
        fake.wait_for(Duration::from_secs(30), |e| e["event"] == "goal")
            .is_some(),
        "the robot never got the navigation goal"
    );
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &fake.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} failed");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_secs(5));
    signal("-CONT");
    // Whatever the brain printed meanwhile is buffered: a link that
    // waited for the lease never went SAFE at all.
    let safe = brain.wait_for(Duration::from_secs(20), false, &|ev| {
        ev["kind"] == "mode" && ev["to"] == "SAFE"
    });
    assert_eq!(
        safe.expect("the brain never noticed the robot was gone")["reason"],
        "robot link is down"
    );
    let note = brain.wait_for(Duration::from_secs(30), false, &|ev| {
        ev["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("reconcile "))
    });
    // Found running on Nav2: adopted, or (the kernel gave up on it while
    // the robot was away) cancelled by its UUID.
    let note = note.expect("no reconcile once the robot was back");
    let m = note["message"].as_str().unwrap();
    assert!(
        m.ends_with("still running on the robot")
            || m.ends_with("running on the robot but no longer wanted; cancelled"),
        "{note}"
    );
    let done = task_end(&mut brain, 60);
    let _ = brain.child.kill();
    assert_eq!(
        done.expect("the task never ended")["task"]["status"],
        "succeeded"
    );
    no_goal_twice(&mut fake);
}

/// A low battery on the ROS 2 robot: the kernel's CHARGE docks it through
/// Nav2's `dock_robot` action (the `DockRobot` types over the wire), the
/// battery reports charging only after the dock's result, and the charge
/// task succeeds with exactly one dock: the link holds the dock's success
/// until the battery charges, so the brain never docks a second time.
#[test]
fn a_low_battery_docks_through_nav2_docking() {
    let dir = temp_dir("ros2-dock");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &["--battery", "12", "--charge-rate", "20"]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &[]);
    let done = brain.wait_for(Duration::from_secs(60), false, &|ev| {
        is_task(ev, "charge", "succeeded") || is_task(ev, "charge", "failed")
    });
    let _ = brain.child.kill();
    assert_eq!(
        done.expect("the charge task never ended")["task"]["status"],
        "succeeded"
    );
    let text = std::fs::read_to_string(&fake.record).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"dock_robot\""))
            .count(),
        1,
        "one DockRobot goal:\n{text}"
    );
    no_goal_twice(&mut fake);
}

/// Goals of one action the fake received.
fn goals_of(fake: &FakeNav2, action: &str) -> usize {
    std::fs::read_to_string(&fake.record)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!("\"action\": \"{action}\"")))
        .count()
}

/// Docks whose battery never says charging (a dead charger): with the
/// docking server (`DockRobot`) or without it (`NavigateToPose` to the
/// dock pose), the link holds each dock's success for the battery, backs
/// off between docks and gives up after `DockGate::LIMIT` in a row, saying
/// why (or the kernel's own cap on failures asks a human first) — never a
/// stream of goals.
fn docks_without_charging_back_off_and_stop(no_dock: bool) {
    let dir = temp_dir(if no_dock {
        "ros2-nodock"
    } else {
        "ros2-deadcharger"
    });
    let domain = Domain::take();
    let mut extra = vec!["--battery", "12", "--never-charge"];
    if no_dock {
        extra.push("--no-dock");
    }
    let mut fake = FakeNav2::start(&domain, &dir, &extra);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &[]);
    let gave_up = brain.wait_for(Duration::from_secs(120), false, &|ev| {
        ev.to_string()
            .contains("docks in a row ended without battery_state saying charging")
            || is_task(ev, "charge", "waiting_human")
            || is_task(ev, "charge", "failed")
    });
    // What the brain does next must not reach the robot as more docks.
    brain.wait_for(Duration::from_secs(3), false, &|_| false);
    let _ = brain.child.kill();
    assert!(gave_up.is_some(), "docking never gave up");
    let action = if no_dock {
        "navigate_to_pose"
    } else {
        "dock_robot"
    };
    let docks = goals_of(&fake, action);
    let limit = robobrain_core::ros2::pace::DockGate::LIMIT as usize;
    assert!(
        (1..=limit).contains(&docks),
        "{docks} {action} goals for a dock that never charges (limit {limit})"
    );
    no_goal_twice(&mut fake);
}

#[test]
fn a_dead_charger_behind_a_docking_server_is_docked_with_backoff_and_a_limit() {
    docks_without_charging_back_off_and_stop(false);
}

#[test]
fn a_dead_charger_without_a_docking_server_is_navigated_to_with_backoff_and_a_limit() {
    docks_without_charging_back_off_and_stop(true);
}

/// Nav2's server restarts mid-goal (the fake killed and started again: it
/// knows no goal of before, and publishes no status until it has one).
/// The link sees a new server before any lease runs out, the brain
/// reconciles ("unknown to the robot"), and the patrol goes on to success;
/// no UUID reached either server twice (a duplicate would have killed it).
#[test]
fn a_nav2_restarted_mid_goal_gets_the_goal_again_under_a_new_uuid() {
    let (domain, fake, mut brain, _) = bedroom_run("ros2-restart", &["--speed", "0.5"]);
    let mut fake = fake.restart(&domain);
    let note = reconcile_note(&mut brain, 60).expect("no reconcile after the restart");
    assert!(
        note.contains("unknown to the robot (never received, or forgotten by a restart)"),
        "{note}"
    );
    let done = task_end(&mut brain, 90);
    let _ = brain.child.kill();
    assert_eq!(
        done.expect("the task never ended")["task"]["status"],
        "succeeded"
    );
    let seen = no_goal_twice(&mut fake);
    assert!(
        seen.len() >= 2,
        "nothing was sent to the new server: {seen:?}"
    );
}

/// Telemetry zones the brain printed until `n` telemetry events.
fn zones(brain: &mut Brain, n: usize) -> Vec<Value> {
    let mut zones = Vec::new();
    while zones.len() < n {
        let Some(ev) = brain.wait_for(Duration::from_secs(30), false, &|ev| {
            ev["kind"] == "telemetry"
        }) else {
            break;
        };
        zones.push(ev["zone"].clone());
    }
    zones
}

/// The pose is AMCL's, in the map frame: its last pose, published before
/// the brain joined (a robot standing still publishes no new one), arrives
/// through transient-local durability. Odometry, offset from map as on a
/// real robot (its origin is where it started: (0, 0), the study), is not
/// read: the robot is in the living room, never in the study.
#[test]
fn the_pose_is_amcls_retained_map_pose_not_odometry() {
    let dir = temp_dir("ros2-amcl");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &[]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &[]);
    let seen = zones(&mut brain, 10);
    let _ = brain.child.kill();
    assert!(!seen.contains(&Value::from("study")), "{seen:?}");
    assert_eq!(seen.last(), Some(&Value::from("living_room")), "{seen:?}");
    fake.assert_alive();
}

/// No `amcl_pose` at all (localisation not up): the pose is unknown, so
/// the robot is in no zone — not in the study at (0, 0).
#[test]
fn an_unknown_pose_is_in_no_zone_and_every_motion_from_it_asks() {
    let dir = temp_dir("ros2-nopose");
    let domain = Domain::take();
    let mut fake = FakeNav2::start(&domain, &dir, &["--no-amcl"]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &[]);
    let seen = zones(&mut brain, 10);
    assert_eq!(seen.len(), 10, "no telemetry");
    assert!(seen.iter().all(Value::is_null), "{seen:?}");
    // From nowhere known no way can be judged: even the kitchen, free from
    // the living room, waits for an operator (the pose (0, 0) would be in
    // the study, and the policy never judges from it).
    brain.send("go to the kitchen");
    let asked = brain.wait_for(Duration::from_secs(30), false, &|ev| {
        ev["kind"] == "approval" && ev["status"] == "requested"
    });
    let _ = brain.child.kill();
    let asked = asked.expect("a motion from an unknown pose did not ask");
    assert!(
        asked["reason"]
            .as_str()
            .is_some_and(|r| r.contains("not known yet")),
        "{asked}"
    );
    fake.assert_alive();
}

/// Nav2's feedback at 100 Hz reaches the brain coalesced: the brain's
/// navigation feedback events are fewer than a tenth of the messages the
/// robot sent for the goal.
#[test]
fn feedback_at_nav2s_100_hz_is_coalesced() {
    let (_domain, mut fake, mut brain, _) = bedroom_run("ros2-feedback", &["--speed", "1"]);
    let count = std::cell::Cell::new(0usize);
    let done = brain.wait_for(Duration::from_secs(90), false, &|ev| {
        if ev["kind"] == "skill" && ev["skill"] == "navigate_to" && ev["status"] == "feedback" {
            count.set(count.get() + 1);
        }
        is_end(ev)
    });
    let _ = brain.child.kill();
    assert_eq!(
        done.expect("the task never ended")["task"]["status"],
        "succeeded"
    );
    let mut sent = 0;
    while let Some(r) = fake.wait_for(Duration::from_secs(1), |e| {
        e["event"] == "result" && e["action"] == "navigate_to_pose"
    }) {
        sent += r["feedbacks"].as_u64().unwrap_or(0) as usize;
    }
    let got = count.get();
    assert!(sent > 100, "the robot sent {sent} feedback messages");
    assert!(
        got >= 1 && got * 10 < sent,
        "{got} feedback events for {sent} messages"
    );
    no_goal_twice(&mut fake);
}

/// On a shared robot another client's goal waits on `dock_robot`. The
/// user's stop, the E-stop (without `estop_cancel_all=true`) and the
/// brain's shutdown cancel robobrain's goal by its UUID, never every goal:
/// the other client's goal is never cancelled.
#[test]
fn stops_cancel_only_the_goals_robobrain_sent() {
    let (_domain, mut fake, mut brain, goal) = bedroom_run("ros2-shared", &["--speed", "0.3"]);
    let ours = goal["goal_id"].clone();
    fake.send("foreign");
    let foreign = fake.wait_for(Duration::from_secs(10), |e| e["event"] == "foreign");
    let foreign = foreign.expect("no foreign goal")["goal_id"].clone();
    brain.send(r#"{"cmd":"stop"}"#);
    let cancel = fake.wait_for(Duration::from_secs(20), |e| e["event"] == "cancel");
    let cancel = cancel.expect("the stop cancelled nothing");
    assert_eq!(cancel["everything"], false, "{cancel}");
    assert_eq!(cancel["canceled"], Value::from(vec![ours]), "{cancel}");
    brain.send(r#"{"cmd":"estop"}"#);
    assert!(
        fake.wait_for(Duration::from_secs(10), |e| e["event"] == "cmd_vel"
            && e["zero"] == true)
            .is_some(),
        "no zero twist after the E-stop"
    );
    // The shutdown's rest: SIGTERM, the brain closes the run.
    let _ = Command::new("kill")
        .args(["-TERM", &brain.child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while brain.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = brain.child.kill();
    let mut cancels = Vec::new();
    while let Some(c) = fake.wait_for(Duration::from_secs(2), |e| e["event"] == "cancel") {
        cancels.push(c);
    }
    for c in &cancels {
        assert_eq!(c["everything"], false, "{c}");
        assert!(!c["canceled"].as_array().unwrap().contains(&foreign), "{c}");
    }
    no_goal_twice(&mut fake);
}

/// Every service request robobrain sends is one rmw_cyclonedds would send:
/// its request writer carries `clientid=…;` in USER_DATA, so the fake (as
/// `rmw_send_response` does) answers only once it has matched the reply
/// reader with the same id — none is lost for want of it; and its sequence
/// number is the int64 of `cdds_request_header_t`, counting up from 1, not
/// two 32-bit halves (`1 << 32` for the first, read as the int64 it is).
#[test]
fn service_requests_carry_a_client_id_and_a_64_bit_sequence_number() {
    let dir = temp_dir("ros2-clientid");
    let domain = Domain::take();
    let fake = FakeNav2::start(&domain, &dir, &[]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["去卧室"]);
    let events = fake.collect(Duration::from_secs(60), |e| e["event"] == "result");
    let _ = brain.child.kill();
    assert!(
        events.last().is_some_and(|e| e["event"] == "result"),
        "the navigation never ended: {events:?}"
    );
    let lost: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "lost_reply")
        .collect();
    assert!(lost.is_empty(), "replies lost: {lost:?}");
    let requests: Vec<_> = events.iter().filter(|e| e["event"] == "request").collect();
    let mut clients: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for r in &requests {
        let id = r["clientid"]
            .as_str()
            .unwrap_or_else(|| panic!("a request without a client id: {r}"));
        clients
            .entry(format!("{} {} {id}", r["action"], r["service"]))
            .or_default()
            .push(r["request_seq"].as_i64().unwrap());
    }
    for service in ["send_goal", "get_result"] {
        assert!(
            requests.iter().any(|r| r["service"] == service),
            "no {service} request: {requests:?}"
        );
    }
    let ids: BTreeSet<&str> = requests
        .iter()
        .filter_map(|r| r["clientid"].as_str())
        .collect();
    assert_eq!(
        ids.len(),
        clients.len(),
        "one client id per service client: {clients:?}"
    );
    for (client, seqs) in &clients {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]) && seqs.iter().all(|s| (1..1 << 20).contains(s)),
            "{client}: the sequence numbers, read as the int64 they are, should count up from 1: \
             {seqs:?}"
        );
    }
}
