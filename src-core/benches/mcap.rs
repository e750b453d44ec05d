//! What recording a run as MCAP costs the tick that writes it
//! (docs/BENCHMARKS.md, "Recording MCAP"): the engine ticks in lockstep, as
//! `headless --fast` and `demo` drive it, and each tick's events go to the
//! run's logs at once — the JSONL log alone, or the JSONL log and the MCAP
//! recording (`--mcap`). Two engines of the same seed run patrols back to
//! back (with `watch` at every waypoint) in the same process, ticking in
//! turn and swapping who goes first each tick, so the machine's load falls
//! on both alike. Each sample is one tick plus the writing of its events.
//!
//! In a started run (the console, serve, mcp, headless at real-time pace)
//! the logs are written by the session's recorder task, not on the kernel
//! thread: there the kernel tick does not wait for the recording at all.

#![allow(missing_docs, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod figures;
mod support;

use std::time::{Duration, Instant};

use robobrain_core::engine::Engine;
use robobrain_core::eventlog::EventLog;
use robobrain_core::mapview::MapView;
use robobrain_core::mcap::McapLog;
use robobrain_core::protocol::{Command, Origin};
use robobrain_core::session::RunLog;

/// Sim seconds each engine runs.
const SIM_SECONDS: f64 = 3600.0;

struct Lane {
    engine: Engine,
    log: RunLog,
    samples: Vec<Duration>,
    events: usize,
}

impl Lane {
    fn new(name: &str, dir: &std::path::Path, mcap: bool) -> Self {
        let config = support::config("bench");
        let world = support::world();
        let engine = Engine::simulated(&config, world.clone()).expect("engine");
        let jsonl = EventLog::create(&dir.join(format!("{name}.jsonl"))).expect("jsonl");
        let recording = mcap.then(|| {
            McapLog::create(&dir.join(format!("{name}.mcap")), Some(MapView::of(&world)))
                .expect("mcap")
        });
        Self {
            engine,
            log: RunLog::new(jsonl, recording),
            samples: Vec::with_capacity(40_000),
            events: 0,
        }
    }

    fn tick(&mut self, events: &mut Vec<robobrain_core::protocol::Event>) {
        if self.engine.is_settled() {
            self.engine.submit(
                Command::Say {
                    text: "patrol".into(),
                },
                Origin::console(),
            );
        }
        let start = Instant::now();
        self.engine.tick(events);
        self.log
            .write_batch(events)
            .expect("the logs take the events");
        self.samples.push(start.elapsed());
        self.events += events.len();
        events.clear();
    }
}

fn main() {
    let dir = std::env::temp_dir().join(format!("robobrain-bench-mcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench folder");
    let mut plain = Lane::new("plain", &dir, false);
    let mut recorded = Lane::new("recorded", &dir, true);
    let mut events = Vec::with_capacity(256);
    let mut n = 0u64;
    while plain.engine.time() < SIM_SECONDS {
        if n.is_multiple_of(2) {
            plain.tick(&mut events);
            recorded.tick(&mut events);
        } else {
            recorded.tick(&mut events);
            plain.tick(&mut events);
        }
        n += 1;
    }
    assert_eq!(plain.events, recorded.events, "the same seed, the same run");
    let finish = Instant::now();
    let summary = recorded.log.finish().expect("closed").expect("an MCAP");
    let finish = finish.elapsed();
    let bytes = std::fs::metadata(dir.join("recorded.mcap")).map_or(0, |m| m.len());
    let jsonl_bytes = std::fs::metadata(dir.join("recorded.jsonl")).map_or(0, |m| m.len());
    let _ = std::fs::remove_dir_all(&dir);

    let name = |what: &str| {
        format!(
            "one lockstep tick plus writing its events, {what} (patrols with watch, {SIM_SECONDS:.0} sim s)"
        )
    };
    figures::record_durations(
        "mcap.tick_jsonl",
        &name("JSONL log only"),
        &plain.samples,
        "µs",
    );
    figures::record_durations(
        "mcap.tick_jsonl_mcap",
        &name("JSONL log and MCAP recording"),
        &recorded.samples,
        "µs",
    );
    figures::record(
        "mcap.finish",
        "closing the MCAP recording (index, summary)",
        finish.as_secs_f64() * 1e3,
        "ms",
    );
    figures::record(
        "mcap.events",
        "events in the run",
        recorded.events as f64,
        "events",
    );
    figures::record(
        "mcap.messages",
        "MCAP messages (events and views)",
        summary.messages as f64,
        "messages",
    );
    figures::record(
        "mcap.bytes",
        "MCAP file size (zstd chunks)",
        bytes as f64 / 1024.0,
        "KiB",
    );
    figures::record(
        "mcap.jsonl_bytes",
        "JSONL log size",
        jsonl_bytes as f64 / 1024.0,
        "KiB",
    );

    let spread = |samples: &[Duration]| {
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        (
            figures::percentile(&us, 0.5),
            figures::percentile(&us, 0.99),
            us[us.len() - 1],
        )
    };
    let (p50, p99, max) = spread(&plain.samples);
    let (mp50, mp99, mmax) = spread(&recorded.samples);
    println!(
        "tick + logs, {} ticks each, {} events, {} MCAP messages:",
        plain.samples.len(),
        recorded.events,
        summary.messages
    );
    println!("  JSONL only:   p50 {p50:.1} µs, p99 {p99:.1} µs, max {max:.1} µs");
    println!("  JSONL + MCAP: p50 {mp50:.1} µs, p99 {mp99:.1} µs, max {mmax:.1} µs");
    println!(
        "  closing the MCAP: {:.2} ms; MCAP {:.0} KiB, JSONL {:.0} KiB",
        finish.as_secs_f64() * 1e3,
        bytes as f64 / 1024.0,
        jsonl_bytes as f64 / 1024.0
    );
}
