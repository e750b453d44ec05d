//! The model brain's own costs, against `mock-llm` on loopback with zero
//! latency (whole-run percentiles; criterion's mean-centred report does not
//! give p99):
//!
//! - overhead: what `LlmBrain` adds around a call — building the request
//!   (`decide`) and parsing and validating the reply (the `poll` that returns
//!   the decision) — without the HTTP round trip;
//! - token latency: from the moment mock-llm writes a streamed chunk to the
//!   moment its `token` event reaches a subscriber of the async runtime.
//!
//! - a real model beside the mock: decisions of the same observation (its
//!   numbers moving a little each time, as a running task's do) asked of
//!   llama.cpp's own server (PyPI `xllamacpp`, SmolLM2-135M-Instruct Q4_1,
//!   one slot, two threads; `./x setup` installs both) and of mock-llm, in
//!   the same run: the cold first decision (the probe of what the endpoint
//!   honours, then a prompt with nothing cached), then the time to the
//!   first streamed token, the whole decision (a repair included) and the
//!   share of decisions the model made that passed validation; with the
//!   decide prompt's size as the server counted it; and decisions asked
//!   while a long memory summary holds the server's only slot, with the
//!   endpoint's slots (the summary yields) and without (the server queues
//!   the decision behind it).
//!
//! Run with `cargo bench -p robobrain-core --bench llm`.

#![allow(missing_docs, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod figures;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use robobrain_core::brain::{Brain, LlmBrain, Thinking};
use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::llm::llama_server::{LlamaServer, default_model, default_python};
use robobrain_core::llm::mock_script;
use robobrain_core::llm::mock_server::MockServer;
use robobrain_core::llm::{LlmConfig, Secret};
use robobrain_core::protocol::BrainKind;
use robobrain_core::protocol::{Command, EventKind, Origin};
use robobrain_core::react::Observation;
use robobrain_core::runtime::{Pace, Runtime};
use robobrain_core::skills::SkillRegistry;

const DECISION: &str = r#"decision = { type = "CONTINUE", reason = "the step runs; keep going towards the kitchen", ops = [{ op = "dispatch", skill = "navigate_to", args = { zone = "kitchen" } }] }"#;

/// Keeps the loop turning: every progress check asks the model again.
const KEEP_GOING: &str = r#"decision = { type = "CONTINUE", reason = "nothing has changed; keep watching the patrol", ops = [] }"#;

fn server(extra: &str, decision: &str) -> MockServer {
    let text = format!("{extra}\n[[reply]]\n{decision}\ntimes = 1000000\n");
    let script = mock_script::parse(&text, Path::new("bench-mock.toml")).unwrap();
    MockServer::start(script, "127.0.0.1:0").unwrap()
}

fn llm_config(server: &MockServer, stream: bool) -> LlmConfig {
    LlmConfig {
        base_url: Some(server.base_url()),
        api_key: Some(Secret::new("bench")),
        stream,
        ..LlmConfig::default()
    }
}

fn observation() -> Observation {
    serde_json::from_value(serde_json::json!({
        "time": 12.5, "task_id": "t1", "task_kind": "goto", "title": "go to kitchen",
        "plan": [{"skill": "navigate_to", "args": {"zone": "kitchen"}}], "step": 0, "plan_len": 1,
        "iteration": 2, "zone": "hall", "battery_pct": 87.25, "charging": false,
        "battery_resume_pct": 80.0, "distance_to_target": 3.5, "running": [],
        "last_result": {"result": "failed", "skill": "navigate_to", "args": {"zone": "kitchen"},
                        "code": "blocked", "message": "kitchen_door is blocked"},
        "failures": 1, "no_progress": null, "preempt": null,
        "blocked_passages": ["kitchen_door"], "incidents": [], "replan_wait_s": 3.0
    }))
    .unwrap()
}

/// Prints the spread of `xs` (milliseconds) and records it under `id`.
fn percentiles(id: &str, label: &str, mut xs: Vec<f64>) {
    xs.sort_by(f64::total_cmp);
    figures::record_spread(id, label, &xs, "ms");
    figures::record(
        &format!("{id}.p90"),
        &format!("{label}, p90 of {}", xs.len()),
        figures::percentile(&xs, 0.9),
        "ms",
    );
    let p = |q: f64| figures::percentile(&xs, q);
    println!(
        "{label}: n = {}, p50 = {:.3} ms, p90 = {:.3} ms, p99 = {:.3} ms, max = {:.3} ms",
        xs.len(),
        p(0.5),
        p(0.9),
        p(0.99),
        xs[xs.len() - 1]
    );
}

fn overhead(stream: bool, n: usize) {
    let server = server("", DECISION);
    let mut brain = LlmBrain::new(&llm_config(&server, stream)).unwrap();
    let registry = SkillRegistry::with_builtins().unwrap();
    let obs = observation();
    let mut overhead = Vec::with_capacity(n);
    let mut round_trip = Vec::with_capacity(n);
    let mut events = Vec::new();
    for i in 0..n + 20 {
        let t0 = Instant::now();
        assert!(matches!(brain.decide(&obs, &registry), Thinking::Pending));
        let build = t0.elapsed();
        // Wait for the whole reply, draining streamed tokens as they come.
        let parse = loop {
            brain.wait(Duration::from_secs(5));
            let t = Instant::now();
            let answer = brain.poll(&mut events);
            let spent = t.elapsed();
            match answer {
                Thinking::Pending => {}
                Thinking::Done(Ok(_)) => break spent,
                Thinking::Done(Err(e)) => panic!("{e}"),
            }
        };
        events.clear();
        if i >= 20 {
            overhead.push((build + parse).as_secs_f64() * 1e3);
            round_trip.push(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    let mode = if stream { "streamed" } else { "plain" };
    percentiles(
        &format!("llm.overhead_{mode}"),
        &format!("brain overhead, {mode} (build + parse + validate)"),
        overhead,
    );
    percentiles(
        &format!("llm.whole_call_{mode}"),
        &format!("whole call, {mode} (for reference: loopback HTTP included)"),
        round_trip,
    );
}

fn token_latency(decisions: usize) {
    let server = server("chunk_chars = 4\nchunk_delay_ms = 2", KEEP_GOING);
    let config = support::config("bench-llm");
    let mut kernel = config.kernel.clone();
    kernel.progress_check_s = 0.2;
    kernel.max_iterations = 100_000;
    let config = Config { kernel, ..config };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let latencies = rt.block_on(async {
        let mut engine = Engine::simulated(&config, support::world()).unwrap();
        engine.set_brain(Box::new(LlmBrain::new(&llm_config(&server, true)).unwrap()));
        let runtime = Runtime::start(engine, Pace::RealTime { speed: 1.0 });
        let mut events = runtime.subscribe();
        runtime
            .send(
                Command::Say {
                    text: "巡逻".into(),
                },
                Origin::console(),
            )
            .await
            .unwrap();
        let mut received = Vec::new();
        let mut calls = 0;
        while calls < decisions {
            let Ok(Ok(event)) = tokio::time::timeout(Duration::from_secs(10), events.recv()).await
            else {
                break;
            };
            match event.kind {
                EventKind::Token { text, .. } => received.push((text, Instant::now())),
                EventKind::LlmCall(_) => calls += 1,
                _ => {}
            }
        }
        runtime.shutdown().await;
        received
    });
    // Match each token event to the chunk that carried it, in order.
    let sent: Vec<_> = server
        .sent()
        .into_iter()
        .filter(|s| !s.text.is_empty())
        .collect();
    let xs: Vec<f64> = latencies
        .iter()
        .zip(&sent)
        .map(|((text, at), s)| {
            assert_eq!(
                text, &s.text,
                "token events arrive in the order they were sent"
            );
            at.duration_since(s.at).as_secs_f64() * 1e3
        })
        .collect();
    percentiles(
        "llm.token_latency",
        "streamed chunk written → token event at a subscriber",
        xs,
    );
}

/// `watch` asking a vision model that answers after `latency_ms`: from the
/// frame handed over to the validated result (seed 000's target: < 2 s).
fn watch_with_model(latency_ms: u64, n: usize) {
    use robobrain_core::link::Telemetry;
    use robobrain_core::perception::model::{VisionModel, judge};
    use robobrain_core::perception::{Camera, SimCamera};
    let reply = r#"content = "{\"objects_detected\": [\"sofa\"], \"emergency\": false, \"confidence\": 0.9, \"description\": \"a quiet living room\"}""#;
    let server = server(
        &format!("[[reply]]\nlatency_ms = {latency_ms}\n{reply}\ntimes = 1000000\n"),
        DECISION,
    );
    let mut model = VisionModel::new(&llm_config(&server, false)).unwrap();
    let world = support::world();
    let t = Telemetry {
        zone: Some("living_room".into()),
        ..Telemetry::default()
    };
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let frame = SimCamera.capture(&world, &t).unwrap();
        let id = model.ask(&frame).unwrap();
        let reply = loop {
            if let Some((_, reply)) = model.poll().into_iter().find(|(got, _)| *got == id) {
                break reply;
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        let seen = judge(reply, &frame).unwrap();
        assert!(seen.fallback.is_none(), "{:?}", seen.fallback);
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    percentiles(
        "llm.watch_vision_model",
        &format!(
            "watch with a vision model answering after {latency_ms} ms (capture + request + reply + validation)"
        ),
        ms,
    );
}

/// What `n` decisions against one endpoint took.
struct Decisions {
    /// The first decision: the probe, then a prompt nothing is cached for.
    cold_ms: f64,
    /// Wall time to the first streamed token of each later `decide` call.
    first_token_ms: Vec<f64>,
    /// Wall time of each later decision, from `decide` to the decision (a repair included).
    decision_ms: Vec<f64>,
    /// Later decisions the model made that passed validation.
    valid: usize,
    /// The decide request's prompt tokens, as the endpoint counted them.
    prompt_tokens: Option<u64>,
}

/// The bench's observation as the `i`-th decision of a running task sees it:
/// its numbers move between decisions while the prompt's prefix (the system
/// message) stays, as the server's cache wants.
fn moved(i: usize) -> Observation {
    let mut obs = observation();
    #[allow(clippy::cast_precision_loss)]
    let i = i as f64;
    obs.time += i;
    obs.battery_pct -= 0.1 * i;
    obs.distance_to_target = obs.distance_to_target.map(|d| (d - 0.05 * i).max(0.1));
    obs
}

/// One decision to its end: its wall time in milliseconds (from `decide` to
/// the decision, a repair included), whose it was, and the events it made.
fn decide_once(
    brain: &mut LlmBrain,
    obs: &Observation,
    registry: &SkillRegistry,
) -> (f64, BrainKind, Vec<EventKind>) {
    let mut events = Vec::new();
    let t0 = Instant::now();
    let mut answer = brain.decide(obs, registry);
    let kind = loop {
        match answer {
            Thinking::Done(Ok((_, kind))) => break kind,
            Thinking::Done(Err(e)) => panic!("{e}"),
            Thinking::Pending => {
                brain.wait(Duration::from_millis(50));
                answer = brain.poll(&mut events);
            }
        }
    };
    (t0.elapsed().as_secs_f64() * 1e3, kind, events)
}

/// `n` decisions on `config`, each asked while a long memory summary (capped
/// at 512 tokens) is already being generated on the same endpoint — issue
/// 40's one-slot case. With the endpoint's slots (`slots` unset: one for a
/// local server) the summary gives its slot up and the decision is served
/// at once; with `slots = 0` (no limit, the behaviour before) the server
/// queues the decision behind the summary.
fn decisions_behind_a_summary(config: &LlmConfig, n: usize) -> Vec<f64> {
    use robobrain_core::llm::LlmClient;
    use std::sync::mpsc;
    let config = LlmConfig {
        max_tokens: robobrain_core::llm::MaxTokens {
            summary: 512,
            ..config.max_tokens
        },
        ..config.clone()
    };
    let mut brain = LlmBrain::new(&config).unwrap();
    let registry = SkillRegistry::with_builtins().unwrap();
    let client = LlmClient::new(&config).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The probe and a first decision, so the prompt's prefix is cached.
    decide_once(&mut brain, &moved(0), &registry);
    let mut ms = Vec::with_capacity(n);
    for i in 1..=n {
        let (started, generating) = mpsc::channel();
        let summary = {
            let client = client.clone();
            let body = serde_json::json!({
                "model": "smollm2",
                "messages": [{"role": "user", "content":
                    "Write a long, detailed report of a robot's night patrol of an apartment, room by room, in many paragraphs."}],
                "temperature": 0.0,
                "stream": true,
            });
            rt.spawn(async move {
                let mut first = Some(started);
                client
                    .chat(body, &mut |_| {
                        if let Some(tx) = first.take() {
                            let _ = tx.send(());
                        }
                    })
                    .await
            })
        };
        // The summary holds the slot and is writing before the decision is asked.
        generating
            .recv_timeout(Duration::from_secs(120))
            .expect("the summary starts");
        let (wall, _, _) = decide_once(&mut brain, &moved(i), &registry);
        ms.push(wall);
        let done = rt.block_on(summary).unwrap();
        assert!(done.reply.is_ok(), "the summary is answered in the end");
    }
    ms
}

/// `n` decisions after a cold one, with the model brain on `config`.
fn decisions(config: &LlmConfig, n: usize) -> Decisions {
    let mut brain = LlmBrain::new(config).unwrap();
    let registry = SkillRegistry::with_builtins().unwrap();
    let mut out = Decisions {
        cold_ms: 0.0,
        first_token_ms: Vec::new(),
        decision_ms: Vec::new(),
        valid: 0,
        prompt_tokens: None,
    };
    for i in 0..=n {
        let (wall, kind, events) = decide_once(&mut brain, &moved(i), &registry);
        let call = events.iter().find_map(|e| match e {
            EventKind::LlmCall(c) if c.purpose == "decide" => Some(c.clone()),
            _ => None,
        });
        if i == 0 {
            out.cold_ms = wall;
            for e in &events {
                if let EventKind::Log { message, .. } = e
                    && message.starts_with("structured output")
                {
                    println!("  {message}");
                }
            }
            continue;
        }
        let call = call.expect("each decision asks the model");
        out.prompt_tokens = out.prompt_tokens.or(call.prompt_tokens);
        out.first_token_ms
            .extend(call.first_token_ms.map(|ms| ms as f64));
        out.decision_ms.push(wall);
        if kind == BrainKind::Model {
            out.valid += 1;
        }
    }
    out
}

/// The same decisions asked of llama.cpp's server and of mock-llm.
fn real_beside_mock(n: usize) {
    let real = match LlamaServer::start(&default_python(), &default_model(), 8192, 2) {
        Ok(server) => server,
        Err(e) => panic!("{e}"),
    };
    let mock = server("", DECISION);
    for (name, url, timeout) in [
        ("real", real.base_url().to_string(), 300.0),
        ("mock", mock.base_url(), 10.0),
    ] {
        let config = LlmConfig {
            base_url: Some(url),
            timeout_s: timeout,
            max_retries: 0,
            cooldown_after: 1_000_000,
            ..LlmConfig::default()
        };
        let label = if name == "real" {
            "llama.cpp server, SmolLM2-135M Q4_1, 2 threads"
        } else {
            "mock-llm"
        };
        println!("{label}:");
        let d = decisions(&config, n);
        println!(
            "  cold first decision (probe + uncached prompt): {:.0} ms",
            d.cold_ms
        );
        figures::record(
            &format!("llm.{name}.cold_decision"),
            &format!("{label}: the first decision, probe included, nothing cached"),
            d.cold_ms,
            "ms",
        );
        if !d.first_token_ms.is_empty() {
            percentiles(
                &format!("llm.{name}.first_token"),
                &format!("  {label}: request → first streamed token"),
                d.first_token_ms.clone(),
            );
        }
        percentiles(
            &format!("llm.{name}.decision"),
            &format!("  {label}: decide → decision (repair included)"),
            d.decision_ms.clone(),
        );
        #[allow(clippy::cast_precision_loss)]
        let share = 100.0 * d.valid as f64 / d.decision_ms.len() as f64;
        println!(
            "  valid decisions: {} of {} ({share:.0} %); decide prompt: {} tokens",
            d.valid,
            d.decision_ms.len(),
            d.prompt_tokens.map_or("?".into(), |t| t.to_string())
        );
        figures::record(
            &format!("llm.{name}.valid_share"),
            &format!(
                "{label}: decisions the model made that passed validation, of {}",
                d.decision_ms.len()
            ),
            share,
            "%",
        );
        if let Some(tokens) = d.prompt_tokens {
            #[allow(clippy::cast_precision_loss)]
            figures::record(
                &format!("llm.{name}.decide_prompt_tokens"),
                &format!("{label}: the decide request's prompt tokens"),
                tokens as f64,
                "tokens",
            );
        }
    }
    // Issue 40: a decision asked while a background summary holds the only slot.
    let behind = n.min(5);
    for (id, slots, label) in [
        (
            "llm.real.decision_behind_summary",
            None,
            "llama.cpp server: decide → decision while a summary is being written (slots = 1: the summary yields)",
        ),
        (
            "llm.real.decision_behind_summary_unlimited",
            Some(0),
            "llama.cpp server: the same with slots = 0 (no limit: the server queues the decision)",
        ),
    ] {
        let config = LlmConfig {
            base_url: Some(real.base_url().to_string()),
            timeout_s: 300.0,
            max_retries: 0,
            cooldown_after: 1_000_000,
            slots,
            ..LlmConfig::default()
        };
        percentiles(id, label, decisions_behind_a_summary(&config, behind));
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    overhead(false, 300);
    overhead(true, 300);
    token_latency(40);
    watch_with_model(300, 20);
    let n = std::env::var("ROBOBRAIN_BENCH_LLM_DECISIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    real_beside_mock(n);
}
