//! The ROS 2 link end to end (`--robot ros2://…`, feature `ros2`), against
//! a fake Nav2 robot nobody here wrote the DDS of: tests/fixtures/fake_nav2.py
//! on Eclipse Cyclone DDS (PyPI `cyclonedds`, installed by `./x setup`),
//! RustDDS ↔ Cyclone DDS on loopback. Each test has a domain of its own
//! (held by a socket on a port of that domain), so tests in parallel never
//! see each other's robots.

use std::collections::BTreeMap;
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

fn is_task(ev: &Value, kind: &str, status: &str) -> bool {
    ev["kind"] == "task" && ev["task"]["kind"] == kind && ev["task"]["status"] == status
}

fn no_goal_twice(fake: &FakeNav2) -> BTreeMap<String, usize> {
    let seen = fake.goals_received();
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "goals the robot received twice: {twice:?}"
    );
    seen
}

/// A patrol of the apartment's default route on the ROS 2 robot: every
/// waypoint is a Nav2 goal the Cyclone fake accepts, moves to and reports
/// succeeded; the task ends succeeded and no goal reached the robot twice.
#[test]
fn a_patrol_runs_end_to_end_on_a_cyclone_dds_nav2() {
    let dir = temp_dir("ros2-patrol");
    let domain = Domain::take();
    let fake = FakeNav2::start(&domain, &dir, &[]);
    let db = dir.join("brain.db");
    let mut brain = Brain::start_with(&domain.url(), &db, SPEED, &[], &["巡逻"]);
    let done = brain.wait_for(Duration::from_secs(120), true, &|ev| {
        is_task(ev, "patrol", "succeeded") || is_task(ev, "patrol", "failed")
    });
    let _ = brain.child.kill();
    let done = done.expect("the patrol never ended");
    assert_eq!(done["task"]["status"], "succeeded", "{done}");
    let seen = no_goal_twice(&fake);
    let world = World::builtin("apartment").unwrap();
    let route = world.route("default").unwrap();
    assert!(
        seen.len() >= route.len(),
        "one Nav2 goal per waypoint of {route:?}: {seen:?}"
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
    let fake = FakeNav2::start(&domain, &dir, &[]);
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
    let seen = no_goal_twice(&fake);
    let ledger = store.ledger(crate::durable::THREAD).unwrap();
    let hex = |id: &str| -> String {
        robobrain_core::ros2::goal_uuid(id)
            .iter()
            .fold(String::new(), |mut s, b| {
                let _ = std::fmt::Write::write_fmt(&mut s, format_args!("{b:02x}"));
                s
            })
    };
    for uuid in seen.keys() {
        let row = ledger.iter().find(|l| hex(&l.goal_id) == *uuid);
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
    no_goal_twice(&fake);
}

/// The robot goes silent mid-goal (its process stopped: no DDS at all)
/// and comes back: the link goes down (the kernel is SAFE), rejoins the
/// domain, comes up, asks Nav2 about the goal, adopts it, and the task
/// finishes, with no goal received twice.
#[test]
fn a_robot_lost_and_back_is_safe_then_reconciled() {
    let dir = temp_dir("ros2-lost");
    let domain = Domain::take();
    let fake = FakeNav2::start(&domain, &dir, &["--speed", "1"]);
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
    let safe = brain.wait_for(Duration::from_secs(30), false, &|ev| {
        ev["kind"] == "mode" && ev["to"] == "SAFE"
    });
    signal("-CONT");
    assert_eq!(
        safe.expect("the brain never noticed the robot was gone")["reason"],
        "robot link is down"
    );
    let note = brain.wait_for(Duration::from_secs(30), false, &|ev| {
        ev["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("reconcile "))
    });
    let note = note.expect("no reconcile once the robot was back");
    assert!(
        note["message"]
            .as_str()
            .unwrap()
            .ends_with("still running on the robot"),
        "{note}"
    );
    let done = brain.wait_for(Duration::from_secs(60), false, &|ev| {
        ev["kind"] == "task"
            && ["succeeded", "failed"].contains(&ev["task"]["status"].as_str().unwrap_or(""))
    });
    let _ = brain.child.kill();
    assert_eq!(
        done.expect("the task never ended")["task"]["status"],
        "succeeded"
    );
    no_goal_twice(&fake);
}

/// A low battery on the ROS 2 robot: the kernel's CHARGE docks it through
/// Nav2's `dock_robot` action (the `DockRobot` types over the wire), the
/// battery reports charging, and the charge task succeeds.
#[test]
fn a_low_battery_docks_through_nav2_docking() {
    let dir = temp_dir("ros2-dock");
    let domain = Domain::take();
    let fake = FakeNav2::start(&domain, &dir, &["--battery", "12", "--charge-rate", "20"]);
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
    assert!(
        text.lines().any(|l| l.contains("\"dock_robot\"")),
        "no DockRobot goal reached the robot:\n{text}"
    );
    no_goal_twice(&fake);
}
