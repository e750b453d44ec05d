//! Durable execution costs (docs/benchmarks/durable.md).
//!
//! - `react_iteration/rule_brain_durable_wal_normal`: one ReAct iteration
//!   whose tick commits its events, a checkpoint and a ledger row to SQLite
//!   (WAL, `synchronous=NORMAL`) before the goal is sent. Compare with
//!   `react_iteration/rule_brain_no_persistence` in `react.rs`.
//! - `react_iteration/rule_brain_durable_loop_only`: the same with patrols
//!   that only go round (no `watch`, whose camera frame is a sixth of the
//!   iteration above): like for like with `rule_brain_no_persistence`, so
//!   the difference between the two is the store alone.
//! - `react_iteration/rule_brain_durable_effects`: the first, with the
//!   default `[store] synchronous = "effects"`: every iteration here
//!   dispatches a goal, so each one's commit waits for an `fdatasync` of
//!   the WAL before the goal goes (what a power cut never loses; the
//!   figure is the disk's more than the brain's).
//! - Printed once: checkpoint bytes per iteration, and the time to resume a
//!   thread of 1 000+ steps up to its first dispatch.
//! - `ROBOBRAIN_BENCH_ITERATIONS_ONLY=N`: only N iterations, for a profiler.

#![allow(missing_docs, clippy::expect_used)]

mod figures;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use criterion::Criterion;
use robobrain_core::engine::Engine;
use robobrain_core::protocol::{Command, EventKind, Origin, SkillStatus};
use robobrain_core::store::{Store, StoreConfig, Synchronous};

const THREAD: &str = "bench";

fn db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rb-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("robobrain.db")
}

fn open_engine(path: &Path, resume: bool) -> Engine {
    open_engine_with(path, resume, &support::config(THREAD), Synchronous::Normal)
}

fn open_engine_with(
    path: &Path,
    resume: bool,
    config: &robobrain_core::config::Config,
    synchronous: Synchronous,
) -> Engine {
    let mut engine = Engine::new(
        config,
        support::world(),
        Box::new(support::InstantLink::default()),
    )
    .expect("engine");
    let store = Store::open(path, synchronous).expect("store");
    engine
        .attach_store(store, &StoreConfig::default(), resume)
        .expect("attach");
    engine
}

fn is_decision(e: &robobrain_core::protocol::Event) -> bool {
    matches!(e.kind, EventKind::Decision { .. })
}

fn is_dispatch(e: &robobrain_core::protocol::Event) -> bool {
    matches!(
        &e.kind,
        EventKind::Skill {
            status: SkillStatus::Dispatched,
            ..
        }
    )
}

/// Ticks until `n` ReAct iterations ran, giving the robot a new two-stop
/// patrol whenever it runs out of work; returns the time taken.
fn run_iterations(engine: &mut Engine, n: u64) -> Duration {
    let mut events = Vec::with_capacity(64);
    let mut done = 0;
    let start = Instant::now();
    while done < n {
        if engine.is_settled() {
            engine.submit(
                Command::Say {
                    text: "patrol kitchen and bedroom".into(),
                },
                Origin::console(),
            );
        }
        engine.tick(&mut events);
        done += events.iter().filter(|e| is_decision(e)).count() as u64;
        events.clear();
    }
    start.elapsed()
}

fn react_iteration_durable(c: &mut Criterion) {
    c.bench_function("react_iteration/rule_brain_durable_wal_normal", |b| {
        b.iter_custom(|iters| {
            let path = db("iter");
            let mut engine = open_engine(&path, false);
            run_iterations(&mut engine, iters)
        });
    });
    c.bench_function("react_iteration/rule_brain_durable_loop_only", |b| {
        b.iter_custom(|iters| {
            let path = db("loop");
            let mut engine = open_engine_with(
                &path,
                false,
                &support::loop_only_config(THREAD),
                Synchronous::Normal,
            );
            run_iterations(&mut engine, iters)
        });
    });
    c.bench_function("react_iteration/rule_brain_durable_effects", |b| {
        b.iter_custom(|iters| {
            let path = db("effects");
            let mut engine =
                open_engine_with(&path, false, &support::config(THREAD), Synchronous::Effects);
            run_iterations(&mut engine, iters)
        });
    });
}

/// Checkpoint bytes per iteration, and resume time of a 1 000-step thread.
fn figures() {
    let path = db("figures");
    let iterations = 400;
    let mut engine = open_engine(&path, false);
    let elapsed = run_iterations(&mut engine, iterations);
    let step = engine.state().step;
    drop(engine);
    let store = Store::open(&path, Synchronous::Normal).expect("store");
    let (count, bytes) = store.checkpoint_bytes(THREAD).expect("bytes");
    drop(store);
    let file_bytes: u64 = ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{iterations} iterations in {elapsed:?} ({:?} each, ticks between included); checkpoints: {count}, {bytes} bytes, {:.0} bytes/iteration (full every {}); database file + WAL {file_bytes} bytes",
        elapsed / iterations as u32,
        bytes as f64 / iterations as f64,
        StoreConfig::default().full_every
    );
    figures::record(
        "durable.checkpoint_bytes_per_iteration",
        "checkpoint bytes per durable iteration (400 iterations)",
        bytes as f64 / iterations as f64,
        "B",
    );
    figures::record(
        "durable.file_bytes_per_iteration",
        "database file + WAL bytes per durable iteration (400 iterations, events and ledger included)",
        file_bytes as f64 / iterations as f64,
        "B",
    );
    assert!(step >= 1000, "a thread of 1 000+ steps (has {step})");
    figures::record(
        "durable.resume_steps",
        "steps in the thread the resume figure restores",
        step as f64,
        "steps",
    );
    let mut samples = Vec::new();
    for _ in 0..15 {
        let start = Instant::now();
        let mut engine = open_engine(&path, true);
        let mut events = Vec::new();
        loop {
            if engine.is_settled() {
                engine.submit(
                    Command::Say {
                        text: "patrol kitchen and bedroom".into(),
                    },
                    Origin::console(),
                );
            }
            engine.tick(&mut events);
            if events.iter().any(is_dispatch) {
                break;
            }
            events.clear();
        }
        samples.push(start.elapsed());
    }
    samples.sort();
    println!(
        "resume of a {step}-step thread to its first dispatch: median {:?}, max {:?}",
        samples[samples.len() / 2],
        samples[samples.len() - 1]
    );
    figures::record_durations(
        "durable.resume",
        "resume of the thread to its first dispatch (open, restore, reconcile, ticks)",
        &samples,
        "ms",
    );
}

fn main() {
    // For a profiler (`valgrind --tool=callgrind`, docs/benchmarks/durable.md):
    // only N durable iterations on a fresh database, nothing else.
    if let Some(n) = std::env::var("ROBOBRAIN_BENCH_ITERATIONS_ONLY")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        let mut engine = open_engine(&db("profile"), false);
        let elapsed = run_iterations(&mut engine, n);
        println!("{n} durable iterations in {elapsed:?}");
        return;
    }
    let since = SystemTime::now();
    figures();
    let mut c = Criterion::default().configure_from_args();
    react_iteration_durable(&mut c);
    c.final_summary();
    figures::criterion(
        "react_iteration/rule_brain_durable_wal_normal",
        "durable.iteration",
        "one ReAct iteration with a durable commit per tick (WAL, synchronous=NORMAL)",
        since,
    );
    figures::criterion(
        "react_iteration/rule_brain_durable_effects",
        "durable.iteration_effects",
        "one ReAct iteration with a durable commit per tick under the default synchronous = effects (each iteration dispatches: one fdatasync each)",
        since,
    );
    figures::criterion(
        "react_iteration/rule_brain_durable_loop_only",
        "durable.iteration_loop_only",
        "one ReAct iteration with a durable commit per tick, patrols without watch (like for like with react.iteration)",
        since,
    );
}
