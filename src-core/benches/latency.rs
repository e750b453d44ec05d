//! Whole-run measurements that criterion's mean-centred reports do not give:
//! E-stop latency percentiles through the async runtime, and simulated
//! seconds per wall second in fast (lockstep) mode.
//!
//! Run with `cargo bench -p robobrain-core --bench latency`.

#![allow(missing_docs, clippy::expect_used, clippy::unwrap_used)]

mod figures;
mod support;

use std::time::{Duration, Instant};

use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::link::{GoalKind, LinkError, LinkReply, LinkRequest, RobotLink};
use robobrain_core::protocol::{Command, Origin};
use robobrain_core::runtime::{Pace, Runtime};
use robobrain_core::sim::SimLink;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

/// Wraps the simulator and reports when a navigation starts and when a
/// `stop_base` goal reaches the robot. The bench awaits these reports rather
/// than polling for them: a polling loop on a two-core machine competes with
/// the kernel thread for a core and measures the scheduler, not the brain.
struct StopWatch {
    inner: SimLink,
    stop_at: UnboundedSender<Instant>,
    navigating: UnboundedSender<()>,
}

impl RobotLink for StopWatch {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        if let LinkRequest::SendGoal { kind, .. } = &request {
            match kind {
                GoalKind::StopBase => {
                    let _ = self.stop_at.send(Instant::now());
                }
                GoalKind::Navigate { .. } => {
                    let _ = self.navigating.send(());
                }
                GoalKind::Dock => {}
            }
        }
        self.inner.send(request)
    }
    fn advance(&mut self, dt: f64) {
        self.inner.advance(dt);
    }
    fn drain(&mut self, out: &mut Vec<LinkReply>) {
        self.inner.drain(out);
    }
}

use figures::percentile;

async fn estop_once(config: &Config) -> Duration {
    let (stop_at, mut stopped) = unbounded_channel();
    let (navigating, mut started) = unbounded_channel();
    let world = support::world();
    let link = StopWatch {
        inner: SimLink::new(world.clone(), config.seed),
        stop_at,
        navigating,
    };
    let engine = Engine::new(config, world, Box::new(link)).expect("engine");
    let runtime = Runtime::start(engine, Pace::RealTime { speed: 100.0 });
    runtime
        .send(
            Command::Say {
                text: "go to the bedroom".into(),
            },
            Origin::console(),
        )
        .await
        .unwrap();
    started.recv().await.expect("navigation started");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let sent = Instant::now();
    runtime
        .send(Command::EStop, Origin::console())
        .await
        .unwrap();
    let reached = stopped.recv().await.expect("stop_base sent");
    runtime.shutdown().await;
    reached.duration_since(sent)
}

fn estop_latency() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = support::config("bench");
    let trials = 400;
    let mut us: Vec<f64> = rt.block_on(async {
        let mut v = Vec::with_capacity(trials);
        for _ in 0..trials {
            v.push(estop_once(&config).await.as_secs_f64() * 1e6);
        }
        v
    });
    figures::record_spread(
        "latency.estop",
        "E-stop through Runtime::send → stop_base sent to the robot",
        &us,
        "µs",
    );
    us.sort_by(f64::total_cmp);
    println!(
        "estop_to_stop_base_dispatched (via Runtime::send, {trials} trials): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        percentile(&us, 0.5),
        percentile(&us, 0.99),
        us[us.len() - 1]
    );
}

fn sim_speed() {
    let config = support::config("bench");
    let mut engine = Engine::simulated(&config, support::world()).expect("engine");
    let sim_seconds = 3600.0;
    let mut events = Vec::with_capacity(256);
    let mut count = 0usize;
    let start = Instant::now();
    while engine.time() < sim_seconds {
        if engine.is_settled() {
            engine.submit(
                Command::Say {
                    text: "patrol".into(),
                },
                Origin::console(),
            );
        }
        engine.tick(&mut events);
        count += events.len();
        events.clear();
    }
    let wall = start.elapsed().as_secs_f64();
    figures::record(
        "latency.sim_speed",
        "simulated seconds per wall second, fast lockstep, patrols with watch (3600 sim s)",
        sim_seconds / wall,
        "×",
    );
    figures::record(
        "latency.sim_speed_wall",
        "wall time for 3600 sim s, fast lockstep",
        wall,
        "s",
    );
    figures::record(
        "latency.sim_speed_events",
        "events in 3600 sim s, fast lockstep",
        count as f64,
        "events",
    );
    println!(
        "sim_speed (fast lockstep, patrols back to back, {sim_seconds:.0} sim s, {count} events): {wall:.3} s wall = {:.0}× real time",
        sim_seconds / wall
    );
}

/// Patrol rounds every 70 sim s at 100× real time (0.7 s of wall time
/// apart) for 100 rounds (70 s of wall time): how far each round's start, as a subscriber sees
/// it, is from where the first one and the interval put it.
fn patrol_drift() {
    use robobrain_core::protocol::{EventKind, Origin, TaskStatus};
    let (rounds, interval_s, speed) = (100u32, 70.0, 100.0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut config = support::config("bench-rounds");
    config.patrol.interval_s = Some(interval_s);
    let starts: Vec<Instant> = rt.block_on(async {
        // No battery drain: a charge would make rounds skip their slots,
        // and this measures the schedule, not the battery.
        let mut world = support::world();
        world.battery.idle_drain_per_s = 0.0;
        world.battery.drain_per_m = 0.0;
        let engine = Engine::simulated(&config, world).expect("engine");
        let (runtime, mut events) = Runtime::start_subscribed(engine, Pace::RealTime { speed });
        runtime
            .send(Command::StartPatrol { route: None }, Origin::console())
            .await
            .unwrap();
        let mut starts = Vec::new();
        while starts.len() < rounds as usize {
            let ev = events.recv().await.expect("events");
            if let EventKind::Task { task, .. } = &ev.kind
                && task.kind == "patrol"
                && task.status == TaskStatus::Queued
            {
                starts.push(Instant::now());
            }
        }
        runtime.shutdown().await;
        starts
    });
    let period = Duration::from_secs_f64(interval_s / speed);
    let mut drift_ms: Vec<f64> = starts
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let due = starts[0] + period * k as u32;
            (t.duration_since(due).as_secs_f64() - due.duration_since(*t).as_secs_f64()).abs() * 1e3
        })
        .collect();
    let last = drift_ms[drift_ms.len() - 1];
    figures::record_spread(
        "latency.patrol_drift",
        "|patrol round start − (first + k × interval)|, 100 rounds of 70 sim s at 100×",
        &drift_ms,
        "ms",
    );
    figures::record(
        "latency.patrol_drift.last",
        "|drift| of the 100th patrol round",
        last,
        "ms",
    );
    drift_ms.sort_by(f64::total_cmp);
    println!(
        "patrol_drift ({rounds} rounds, {interval_s} sim s apart at {speed}× = {:.0} ms wall): |drift| p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms, after the last round {last:.3} ms",
        period.as_secs_f64() * 1e3,
        percentile(&drift_ms, 0.5),
        percentile(&drift_ms, 0.99),
        drift_ms[drift_ms.len() - 1],
    );
}

/// `watch` with the offline stand-in, as percentiles: render the view with
/// smoke in it, encode the PNG, label, report.
fn watch_percentiles() {
    use robobrain_core::link::{Incident, Telemetry};
    use robobrain_core::perception::{Camera, SimCamera, vision};
    let world = support::world();
    let kitchen = world.zone("kitchen").expect("kitchen").goal;
    let mut t = Telemetry {
        zone: Some("kitchen".into()),
        ..Telemetry::default()
    };
    (t.pose.x, t.pose.y) = (kitchen.x, kitchen.y);
    t.incidents_in_view.push(Incident {
        zone: "kitchen".into(),
        kind: "smoke".into(),
    });
    let mut camera = SimCamera;
    let mut ms: Vec<f64> = (0..2000)
        .map(|_| {
            let start = Instant::now();
            let frame = camera.capture(&world, &t).expect("frame");
            let seen = vision::stand_in(&frame).expect("vision");
            assert!(seen.emergency);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    figures::record_spread(
        "latency.watch",
        "watch with the offline stand-in (render 240×240, PNG, labels)",
        &ms,
        "ms",
    );
    ms.sort_by(f64::total_cmp);
    println!(
        "watch_stand_in (render 240×240 + PNG + labels, 2000 looks): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(&ms, 0.5),
        percentile(&ms, 0.99),
        ms[ms.len() - 1]
    );
}

fn main() {
    // `cargo bench` passes `--bench`; filters are not supported here.
    sim_speed();
    estop_latency();
    patrol_drift();
    watch_percentiles();
}
