//! Criterion benchmarks of the brain's hot paths.
//!
//! `react_iteration`: one ReAct iteration (observation → decision → compile →
//! guardrails → dispatch → observe) with the rule brain and no persistence.
//! Each tick of a patrol over an instant robot runs exactly one: the previous
//! step's result is observed and the next step is dispatched.

#![allow(missing_docs, clippy::expect_used)]

mod figures;
mod support;

use std::time::{Duration, Instant, SystemTime};

use criterion::Criterion;
use robobrain_core::engine::Engine;
use robobrain_core::protocol::{Command, EventKind, Origin};

fn react_iteration(c: &mut Criterion) {
    c.bench_function("react_iteration/rule_brain_no_persistence", |b| {
        b.iter_custom(|iters| {
            let mut engine = support::instant_patrol(iters as usize + 2);
            support::time_ticks(&mut engine, iters)
        });
    });
}

fn sim_tick(c: &mut Criterion) {
    c.bench_function("engine_tick/simulated_navigation", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let config = support::config("bench");
                let mut engine = Engine::simulated(&config, support::world()).expect("engine");
                engine.submit(
                    Command::Say {
                        text: "patrol".into(),
                    },
                    Origin::console(),
                );
                let mut events = Vec::with_capacity(64);
                let batch = (iters - done).min(2000);
                let start = Instant::now();
                for _ in 0..batch {
                    engine.tick(&mut events);
                    events.clear();
                }
                total += start.elapsed();
                done += batch;
            }
            total
        });
    });
}

/// `watch` with the offline stand-in: render the view around the robot as a
/// PNG (smoke drawn in), label it, and report (seed 000 §3.2).
fn watch_stand_in(c: &mut Criterion) {
    use robobrain_core::link::{Incident, Telemetry};
    use robobrain_core::perception::{Camera, SimCamera, vision};
    let world = support::world();
    let kitchen = world.zone("kitchen").expect("kitchen").clone();
    let mut t = Telemetry {
        zone: Some("kitchen".into()),
        ..Telemetry::default()
    };
    t.pose.x = kitchen.goal.x;
    t.pose.y = kitchen.goal.y;
    t.incidents_in_view.push(Incident {
        zone: "kitchen".into(),
        kind: "smoke".into(),
    });
    let mut camera = SimCamera;
    c.bench_function("watch/stand_in_render_and_labels", |b| {
        b.iter(|| {
            let frame = camera.capture(&world, &t).expect("frame");
            vision::stand_in(&frame).expect("vision")
        });
    });
}

/// Sanity check that the iteration benchmark measures what it says, up to
/// the last tick it will run.
fn check_one_decision_per_tick() {
    let mut engine = support::instant_patrol(1000);
    let mut events = Vec::new();
    for _ in 0..998 {
        engine.tick(&mut events);
        events.clear();
    }
    engine.tick(&mut events);
    let decisions = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Decision { .. }))
        .count();
    let dispatched = events
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Skill {
                    status: robobrain_core::protocol::SkillStatus::Dispatched,
                    ..
                }
            )
        })
        .count();
    assert_eq!(
        (decisions, dispatched),
        (1, 1),
        "one tick must run one iteration with one dispatch"
    );
}

fn main() {
    let since = SystemTime::now();
    check_one_decision_per_tick();
    let mut c = Criterion::default().configure_from_args();
    react_iteration(&mut c);
    sim_tick(&mut c);
    watch_stand_in(&mut c);
    c.final_summary();
    figures::criterion(
        "react_iteration/rule_brain_no_persistence",
        "react.iteration",
        "one ReAct iteration, rule brain, no persistence",
        since,
    );
    figures::criterion(
        "engine_tick/simulated_navigation",
        "react.engine_tick",
        "one engine tick while navigating the simulated apartment",
        since,
    );
    figures::criterion(
        "watch/stand_in_render_and_labels",
        "react.watch_stand_in",
        "watch with the offline stand-in (render, PNG, labels)",
        since,
    );
}
