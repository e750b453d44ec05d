//! The home's three-track path (seed 002 §2), whole-run percentiles
//! (criterion's mean-centred report does not give p99):
//!
//! - intent: the rule parser alone (utterance → device calls);
//! - turn: one whole in-process turn — intent (Home Assistant's grammar
//!   first, then the rules; the grammar from `./x setup`), policy gate, the filled
//!   template, the device calls through the tool layer (schema, ids, the
//!   in-memory audit row), the forged-result summary. The first templated
//!   line exists before the calls run, so this bounds "intent → first
//!   templated speech" from above;
//! - engine: `Engine::submit(say)` + one tick until the template's `speech`
//!   event is out (text voice, so no speech synthesis is timed);
//! - model summary: the summary written by a model behind `mock-llm` on
//!   loopback answering after 800 ms, and its ratio to the template's p99;
//! - semantic: the semantic fallback's index (`[home] semantic`) built for
//!   the apartment with all-MiniLM-L6-v2 from `./x setup`, and one lookup
//!   (the sentence embedded, compared with every template).
//!
//! Run with `cargo bench -p robobrain-core --bench home`.

#![allow(missing_docs, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod figures;
mod support;

use std::path::Path;
use std::time::Instant;

use robobrain_core::config::{Config, HomeConfig};
use robobrain_core::engine::Engine;
use robobrain_core::hci::{self, Home, Step, summary};
use robobrain_core::llm::mock_server::MockServer;
use robobrain_core::llm::{LlmClient, LlmConfig, Secret, mock_script};
use robobrain_core::protocol::{Command, EventKind, Origin, SpeechTrack};
use robobrain_core::store::audit::AuditLog;
use robobrain_core::world::World;
use serde_json::json;

const UTTERANCES: &[&str] = &[
    "打开客厅灯",
    "关掉客厅灯",
    "turn on the kitchen light",
    "turn off the kitchen light",
    "笑一个再把亮度调到100",
    "set the living room light brightness to 40",
];

use figures::percentile;

/// Prints p50, p99 and max of `us` and records them in microseconds under
/// `id` (a figure recorded otherwise passes `None`); returns the p99.
fn report(id: Option<&str>, what: &str, mut us: Vec<f64>) -> f64 {
    if let Some(id) = id {
        figures::record_spread(id, what, &us, "µs");
    }
    us.sort_by(f64::total_cmp);
    let p99 = percentile(&us, 0.99);
    println!(
        "{what} ({} runs): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs, {} over 1 ms",
        us.len(),
        percentile(&us, 0.5),
        p99,
        us[us.len() - 1],
        us.iter().filter(|&&u| u > 1000.0).count()
    );
    p99
}

fn home_config() -> HomeConfig {
    HomeConfig {
        hour: Some(12.0),
        ..HomeConfig::default()
    }
}

fn intent_and_turn() -> f64 {
    let mut home = Home::load(&home_config(), "apartment", "bench")
        .unwrap()
        .with_audit(AuditLog::in_memory().unwrap());
    let (mut intent, mut turn) = (Vec::new(), Vec::new());
    let mut by_grammar = 0;
    for i in 0..6000 {
        let text = UTTERANCES[i % UTTERANCES.len()];
        let t = Instant::now();
        let u = hci::understand(text, &home.devices, &home.scenes, &home.session);
        intent.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(u.is_some(), "{text}");
        let t = Instant::now();
        let done = home.turn(text).unwrap();
        turn.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(done.confirm.is_none(), "{text} ran at once");
        by_grammar += usize::from(done.args.get("grammar").is_some());
    }
    println!(
        "{by_grammar} of 6000 turns understood by Home Assistant's grammar, the rest by the rules"
    );
    // Each utterance's own p99 (which one makes the tail).
    for (k, text) in UTTERANCES.iter().enumerate() {
        let mut own: Vec<f64> = turn
            .iter()
            .skip(k)
            .step_by(UTTERANCES.len())
            .copied()
            .collect();
        own.sort_by(f64::total_cmp);
        println!(
            "  turn {text:?}: p50 {:.1} µs, p99 {:.1} µs",
            percentile(&own, 0.5),
            percentile(&own, 0.99)
        );
    }
    report(Some("home.intent"), "home intent (rule parser)", intent);
    report(
        Some("home.turn"),
        "home turn: intent → template → calls → summary, in process",
        turn,
    )
}

fn engine_template() -> f64 {
    let mut config = Config {
        thread_id: Some("bench-home".into()),
        ..Config::default()
    };
    config.home = home_config();
    config.speech.voice = robobrain_core::voice::VoiceChoice::Text;
    let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
    let mut events = Vec::new();
    let mut us = Vec::new();
    for i in 0..3000 {
        let text = UTTERANCES[i % 4];
        events.clear();
        let t = Instant::now();
        engine.submit(Command::Say { text: text.into() }, Origin::console());
        engine.tick(&mut events);
        let e = t.elapsed();
        assert!(
            events.iter().any(|e| matches!(
                &e.kind,
                EventKind::Speech {
                    track: SpeechTrack::Template,
                    ..
                }
            )),
            "{text}: no template"
        );
        us.push(e.as_secs_f64() * 1e6);
    }
    report(
        Some("home.engine"),
        "engine: say → tick → template speech event (whole tick)",
        us,
    )
}

fn model_summary() -> f64 {
    let script = mock_script::parse(
        "[[reply]]\ncontent = \"I have switched on the living room light for you.\"\nlatency_ms = 800\ntimes = 1000000\n",
        Path::new("bench-summary.toml"),
    )
    .unwrap();
    let server = MockServer::start(script, "127.0.0.1:0").unwrap();
    let client = LlmClient::new(&LlmConfig {
        base_url: Some(server.base_url()),
        api_key: Some(Secret::new("bench")),
        ..LlmConfig::default()
    })
    .unwrap();
    let forged = summary::forge(&[Step::Control {
        device: "living_room_light".into(),
        action: "turn_on".into(),
        args: json!({}),
    }]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut ms = Vec::new();
    for _ in 0..12 {
        let t = Instant::now();
        rt.block_on(summary::model_summary(&client, "qwen-max", &forged))
            .unwrap();
        ms.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let p50 = percentile(&sorted, 0.5);
    let what = "model summary via mock-llm (800 ms latency)";
    let in_ms: Vec<f64> = ms.iter().map(|us| us / 1e3).collect();
    figures::record_spread("home.model_summary", what, &in_ms, "ms");
    report(None, what, ms);
    p50
}

/// The semantic fallback: building its index for the apartment (once, on
/// this thread; the engine builds it on its own) and one lookup.
fn semantic() {
    let mut home = Home::load(&home_config(), "apartment", "bench").unwrap();
    let t0 = Instant::now();
    home.enable_semantic(
        robobrain_core::memory::MemoryConfig::default().model_path(),
        true,
    );
    let build_s = t0.elapsed().as_secs_f64();
    let index = home
        .semantic
        .as_ref()
        .unwrap()
        .index()
        .expect("the index is built (`./x setup` fetches the model)");
    println!(
        "semantic index: {} templates in {build_s:.2} s",
        index.len()
    );
    figures::record(
        "home.semantic_index_build",
        &format!(
            "the semantic fallback's index for the apartment ({} templates)",
            index.len()
        ),
        build_s,
        "s",
    );
    let sentences = [
        "make the kitchen bright",
        "could you get the front door lock unlocked",
        "the living room is too dark",
        "shut the blinds in the bedroom",
    ];
    let mut us = Vec::with_capacity(400);
    for i in 0..420 {
        let t = Instant::now();
        std::hint::black_box(index.nearest(sentences[i % sentences.len()]));
        if i >= 20 {
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    report(
        Some("home.semantic_lookup"),
        "semantic fallback: one lookup (embed the sentence, compare with every template)",
        us,
    );
}

fn main() {
    let turn_p99 = intent_and_turn();
    let engine_p99 = engine_template();
    let summary_p50 = model_summary();
    semantic();
    println!(
        "ratio: model summary p50 / first template bound p99 = {:.0}× (turn), {:.0}× (engine tick)",
        summary_p50 / turn_p99,
        summary_p50 / engine_p99
    );
    figures::record(
        "home.ratio_turn",
        "model summary p50 / whole turn p99",
        summary_p50 / turn_p99,
        "×",
    );
    figures::record(
        "home.ratio_engine",
        "model summary p50 / engine tick p99",
        summary_p50 / engine_p99,
        "×",
    );
}
