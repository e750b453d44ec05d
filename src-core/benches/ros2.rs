//! The ROS 2 link against the Cyclone DDS fake Nav2 (tests/fixtures/fake_nav2.py),
//! RustDDS ↔ Cyclone DDS on loopback (docs/ros2.md):
//! - goal dispatch → accepted: from `RobotLink::send` of a `NavigateToPose`
//!   goal to its `Accepted` reply out of `drain` (a round trip: request
//!   topic, the fake's answer, reply topic);
//! - E-stop → zero `Twist`: from just before the E-stop line's `stop()` to
//!   the fake's own stamp of receipt (its Cyclone listener's; both clocks
//!   are this machine's), while a goal runs;
//! - feedback → `NavFeedback`: from the fake's stamp just before it writes a
//!   `NavigateToPose` feedback to the `Feedback` reply out of `drain`
//!   (matched by the float32 distance it carries).
//!
//! Run: `cargo bench -p robobrain-core --features ros2 --bench ros2`
//! (200 trials; `ROBOBRAIN_BENCH_TRIALS` to change). Needs the test
//! virtualenv's `cyclonedds` (`./x setup`).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use robobrain_core::geometry::Point;
use robobrain_core::link::{GoalKind, LinkReply, LinkRequest, RobotLink};
use robobrain_core::ros2::{Ros2Link, Ros2Options};
use robobrain_core::world::World;
use serde_json::Value;

fn wall_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

mod figures;

/// Prints p50/p99/max of `v` (seconds) and records them as `id` (ms).
fn percentiles(id: &str, name: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| figures::percentile(&v, q);
    println!(
        "{name}: n={} p50={:.3} ms p99={:.3} ms max={:.3} ms",
        v.len(),
        at(0.5) * 1e3,
        at(0.99) * 1e3,
        at(1.0) * 1e3
    );
    let ms: Vec<f64> = v.iter().map(|s| s * 1e3).collect();
    figures::record_spread(id, name, &ms, "ms");
}

fn main() {
    let trials: usize = std::env::var("ROBOBRAIN_BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let python = std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| {
        format!(
            "{}/.cache/robobrain/py/bin/python",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let (domain, _hold) = (20..220u16)
        .rev()
        .find_map(|d| {
            Some((
                d,
                UdpSocket::bind(("127.0.0.1", 7400 + 250 * d + 249)).ok()?,
            ))
        })
        .expect("a free DDS domain");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut fake = Command::new(&python)
        .arg(root.join("tests/fixtures/fake_nav2.py"))
        .args(["--domain", &domain.to_string(), "--namespace", "/bench"])
        .args(["--start", "4,6.5", "--speed", "0.3", "--print-feedback"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{python}: {e} (./x setup creates the test virtualenv)"));
    let (tx, events) = channel::<Value>();
    let out = fake.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let ready = events.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(ready["event"], "ready");
    let opts = Ros2Options::parse(&format!(
        "ros2://?domain={domain}&namespace=/bench&interface=127.0.0.1"
    ))
    .unwrap();
    let world = World::builtin("apartment").unwrap();
    let mut link = Ros2Link::connect(&opts, &world).unwrap();
    let line = link.estop_line().unwrap();
    let mut replies = Vec::new();
    let mut accept = |link: &mut Ros2Link, id: &str, target: Point| -> f64 {
        let t0 = Instant::now();
        link.send(LinkRequest::SendGoal {
            goal_id: id.into(),
            kind: GoalKind::Navigate { target, zone: None },
        })
        .unwrap();
        let deadline = t0 + Duration::from_secs(5);
        loop {
            link.drain(&mut replies);
            if replies
                .drain(..)
                .any(|r| matches!(r, LinkReply::Accepted { goal_id } if goal_id == id))
            {
                return t0.elapsed().as_secs_f64();
            }
            assert!(Instant::now() < deadline, "{id} was never accepted");
            std::thread::yield_now();
        }
    };
    // Warm up discovery and the first samples.
    for i in 0..10 {
        accept(&mut link, &format!("warm{i}"), Point::new(5.0, 6.5));
    }
    let mut dispatch = Vec::new();
    let mut estop = Vec::new();
    for i in 0..trials {
        let target = if i % 2 == 0 {
            Point::new(8.0, 6.5)
        } else {
            Point::new(4.0, 6.5)
        };
        dispatch.push(accept(&mut link, &format!("goal{i}"), target));
        std::thread::sleep(Duration::from_millis(20));
        while events.try_recv().is_ok() {}
        let sent = wall_s();
        line.stop().unwrap();
        let seen = loop {
            let ev = events
                .recv_timeout(Duration::from_secs(5))
                .expect("no zero twist");
            if ev["event"] == "cmd_vel" && ev["zero"] == true {
                break ev["t"].as_f64().unwrap();
            }
        };
        estop.push(seen - sent);
        // The kernel's own stop follows the line's, as in a run.
        link.send(LinkRequest::SendGoal {
            goal_id: format!("stop{i}"),
            kind: GoalKind::StopBase,
        })
        .unwrap();
    }
    // Feedback of one long goal, matched by distance. (The last stop's
    // cancel-all travels on another topic than goals: let it land first.)
    std::thread::sleep(Duration::from_millis(300));
    accept(&mut link, "feedback", Point::new(12.0, 2.0));
    let mut sent_at = std::collections::HashMap::new();
    let mut feedback = Vec::new();
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        let mut out = Vec::new();
        link.drain(&mut out);
        let now = wall_s();
        for ev in events.try_iter() {
            if ev["event"] == "feedback" {
                let d = ev["distance"].as_f64().unwrap();
                sent_at.insert(d.to_bits(), ev["t"].as_f64().unwrap());
            }
        }
        for r in out {
            if let LinkReply::Feedback { feedback: f, .. } = r
                && let Some(t) = sent_at.get(&f.distance_remaining.to_bits())
            {
                feedback.push(now - t);
            }
        }
        std::thread::yield_now();
    }
    percentiles("ros2.dispatch", "ros2 goal dispatch -> accepted", dispatch);
    percentiles("ros2.feedback", "ros2 feedback -> NavFeedback", feedback);
    percentiles(
        "ros2.estop",
        "ros2 E-stop line -> zero Twist at the Cyclone fake",
        estop,
    );
    drop(link);
    let _ = fake.stdin.take().map(|mut s| s.write_all(b"quit\n"));
    let _ = fake.kill();
    let _ = fake.wait();
}
