//! Console timings (whole-run style, percentiles printed):
//!
//! - first frame: world + engine + app built and one 120×40 frame drawn —
//!   as before the session builder, and through it (`Run::assemble`) with a
//!   model configured (mock-llm on loopback), as `robobrain tui` starts;
//! - a full 200×60 frame of a busy console (full feeds, a patrol under way),
//!   with the run's account of a model in its header and panels;
//! - one event through `App::update`, and a 25 ms batch at 200 events/s
//!   followed by its frame, which bounds event → screen latency together
//!   with the frame period (`console::FRAME`).
//!
//! Run: `cargo bench -p robobrain-tui --bench console`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../src-core/benches/figures.rs"]
mod figures;

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::link::Fault;
use robobrain_core::llm::mock_script;
use robobrain_core::llm::mock_server::MockServer;
use robobrain_core::protocol::run::{BrainChoice, BrainInfo, MemoryInfo, MemoryMode};
use robobrain_core::protocol::{Command, Event, Origin, RunInfo};
use robobrain_core::session::{Run, SessionOptions};
use robobrain_core::world::World;
use robobrain_tui::console::{Action, App, FRAME, ui};

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |q: f64| figures::percentile(&samples, q);
    (at(0.5), at(0.99), samples[samples.len() - 1])
}

/// Prints the spread of `samples` and records it as `console.<id>` in `unit`.
fn report(id: &str, unit: &str, name: &str, samples: Vec<Duration>) {
    figures::record_durations(&format!("console.{id}"), name, &samples, unit);
    let n = samples.len();
    let (p50, p99, max) = percentiles(samples);
    println!("{name:<44} n={n:<6} p50 {p50:>10.2?}  p99 {p99:>10.2?}  max {max:>10.2?}");
}

/// A console 200 s into a patrol with a blocked door and low battery: every
/// feed has history, the map has a path.
fn busy() -> (Engine, App, Vec<Event>) {
    let config = Config::default();
    let world = World::resolve(&config.world).unwrap();
    let mut engine = Engine::simulated(&config, world.clone()).unwrap();
    // What the session builder says of a run with a model: the header and
    // the panels draw it.
    engine.set_run_info(RunInfo {
        brain: BrainInfo {
            kind: BrainChoice::Model,
            model: Some("qwen-max".into()),
            endpoint: Some("http://127.0.0.1:8765/v1".into()),
        },
        memory: MemoryInfo {
            mode: MemoryMode::Hybrid,
            note: None,
        },
        services: Vec::new(),
        robot: "sim:".into(),
        db: None,
    });
    let mut app = App::new(world, engine.snapshot(), true);
    engine.submit(
        Command::Say {
            text: "巡逻".into(),
        },
        Origin::console(),
    );
    let mut all = Vec::new();
    let mut out = Vec::new();
    for i in 0..2000 {
        if i == 300 {
            engine.submit(
                Command::Inject {
                    fault: Fault::Block {
                        passage: "kitchen_door".into(),
                    },
                },
                Origin::console(),
            );
        }
        if i == 900 {
            engine.submit(
                Command::Inject {
                    fault: Fault::SetBattery { pct: 21.0 },
                },
                Origin::console(),
            );
        }
        engine.tick(&mut out);
        for e in out.drain(..) {
            all.push(e.clone());
            app.update(Action::Core(Box::new(e)));
        }
        app.update(Action::Snapshot(Box::new(engine.snapshot())));
    }
    (engine, app, all)
}

fn main() {
    let mut firsts = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let config = Config::default();
        let world = World::resolve(&config.world).unwrap();
        let engine = Engine::simulated(&config, world.clone()).unwrap();
        let app = App::new(world, engine.snapshot(), true);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        terminal.draw(|f| ui::draw(&app, f)).unwrap();
        firsts.push(t.elapsed());
    }
    report(
        "first_frame",
        "ms",
        "first frame (engine + app + 120x40 draw)",
        firsts,
    );

    // As `robobrain tui` starts with a model configured: the session builder
    // assembles the run (the model brain, its worker), then the app and a frame.
    let dir = std::env::temp_dir().join(format!("rb-bench-console-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("mock.toml");
    std::fs::write(
        &script,
        "[[reply]]\ndecision = { type = \"FINISH\", reason = \"idle\", ops = [] }\n",
    )
    .unwrap();
    let model = MockServer::start(mock_script::load(&script).unwrap(), "127.0.0.1:0").unwrap();
    let mut config = Config {
        runs_dir: dir.join("runs"),
        ..Config::default()
    };
    config.llm.base_url = Some(model.base_url());
    config.llm.api_key = Some(robobrain_core::llm::Secret::new("bench"));
    // Memory opens on a thread of its own and never holds up the frame;
    // left out so fifty runs do not share one memory folder.
    config.memory.enabled = false;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut with_model = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let run = rt
            .block_on(Run::assemble(&config, SessionOptions::new("bench")))
            .unwrap();
        let app = App::new(run.world.clone(), run.snapshot(), true);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        terminal.draw(|f| ui::draw(&app, f)).unwrap();
        with_model.push(t.elapsed());
    }
    report(
        "first_frame_model",
        "ms",
        "first frame, model (session + app + draw)",
        with_model,
    );

    let (_engine, app, events) = busy();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut frames = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        terminal.draw(|f| ui::draw(&app, f)).unwrap();
        frames.push(t.elapsed());
    }
    report("frame_200x60", "ms", "full frame 200x60, busy", frames);

    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut small = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        terminal.draw(|f| ui::draw(&app, f)).unwrap();
        small.push(t.elapsed());
    }
    report("frame_80x24", "ms", "full frame 80x24, busy", small);

    // Events replayed into a busy console: the cost of one update, and of
    // a frame's worth at 200 events/s (5 events per 25 ms frame) plus the draw.
    let (_engine, mut app, _) = busy();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let per_frame = (200.0 * FRAME.as_secs_f64()).ceil() as usize;
    let mut updates = Vec::new();
    let mut batches = Vec::new();
    for chunk in events.chunks(per_frame).take(4000) {
        let t = Instant::now();
        for e in chunk {
            let u = Instant::now();
            app.update(Action::Core(Box::new(e.clone())));
            updates.push(u.elapsed());
        }
        terminal.draw(|f| ui::draw(&app, f)).unwrap();
        batches.push(t.elapsed());
    }
    report("update", "µs", "one event through App::update", updates);
    let (_, p99, _) = percentiles(batches.clone());
    report(
        "batch_and_frame",
        "ms",
        &format!("{per_frame} events + 200x60 frame (200 ev/s)"),
        batches,
    );
    figures::record(
        "console.event_to_screen",
        "event → screen at 200 events/s, bound: frame period + batch p99",
        (FRAME + p99).as_secs_f64() * 1e3,
        "ms",
    );
    println!(
        "event → screen at 200 events/s: at most {:?} frame period + {p99:.2?} (p99) = {:.2?}",
        FRAME,
        FRAME + p99
    );
}
