//! The decide prompt a small local model can afford (issue 40), through
//! real HTTP on loopback: its size counted the way docs/BENCHMARKS.md counts
//! it (mock-llm's `prompt_tokens`, characters ÷ 4 of the whole request, of
//! scenario 14a's first decision), and a prefix — the tools, the system
//! prompt with the skills — byte-identical from one decision to the next,
//! the state last, so a llama.cpp server's prompt cache serves all of it but
//! the state.

use robobrain_core::llm::mock_script;
use robobrain_core::llm::mock_server::{MockServer, Received};
use robobrain_core::llm::{PromptSize, Secret};
use robobrain_core::scenario::{self, BrainChoice};
use serde_json::Value;

use crate::support::root;

/// The compact prompt's budget, in mock-llm's tokens (issue 40's target).
const COMPACT_BUDGET: u64 = 1_500;

/// Runs scenario 14a ("go to the bedroom" with a model that claims FINISH
/// every turn) against its own mock-llm script on a server this test holds,
/// with `[llm] prompt = size` (`None`: the default). Returns the decide
/// requests the server received and the `prompt_tokens` of each decision's
/// `llm_call` event.
fn run_14a(size: Option<PromptSize>) -> (Vec<Received>, Vec<u64>) {
    let dir = root().join("tests/scenarios");
    let mut s = scenario::load(&dir.join("14a_model_lies_finish.toml")).unwrap();
    let script = mock_script::load(&dir.join("mock/14a_model_lies_finish.toml")).unwrap();
    let server = MockServer::start(script, "127.0.0.1:0").unwrap();
    s.brain = BrainChoice::Llm { mock: None };
    s.config.llm.base_url = Some(server.base_url());
    s.config.llm.api_key = Some(Secret::new("prompt-test-key"));
    if let Some(size) = size {
        s.config.llm.prompt = size;
    }
    let engine = scenario::prepare(&s).unwrap();
    let result = scenario::run(&s, engine, &mut |_, _| {});
    assert!(result.passed, "14a failed:\n{}", result.report);
    let tokens = result
        .events
        .iter()
        .map(robobrain_core::protocol::Event::to_json)
        .filter(|e| e["kind"] == "llm_call" && e["purpose"] == "decide")
        .map(|e| e["prompt_tokens"].as_u64().unwrap())
        .collect();
    let decide = server
        .received()
        .into_iter()
        .filter(|r| r.body["tools"][0]["function"]["name"] == "decide")
        .collect();
    (decide, tokens)
}

fn content(request: &Received, i: usize) -> &str {
    request.body["messages"][i]["content"].as_str().unwrap()
}

#[test]
fn the_compact_decide_prompt_fits_a_small_models_budget() {
    // A loopback endpoint gets the compact prompt without being told.
    let (compact, tokens) = run_14a(None);
    let first = tokens[0];
    // mock-llm's count is the docs' count: characters ÷ 4 of the request.
    let chars = compact[0].body.to_string().chars().count() as u64;
    assert_eq!(first, chars.div_ceil(4));
    assert!(
        first <= COMPACT_BUDGET,
        "the compact decide prompt is {first} tokens, over {COMPACT_BUDGET}:\n{}",
        content(&compact[0], 0)
    );
    let system = content(&compact[0], 0);
    // Every skill is there, in one line, with its arguments.
    for line in [
        "- navigate_to(x?: number, y?: number, zone?: string): ",
        "- alert(description?: string, evidence?: string|null, kinds: string[], vision?: object, zone: string): ",
        "- dock(): ",
    ] {
        assert!(system.contains(line), "no {line:?} in\n{system}");
    }
    assert!(!system.contains("\"parameters\""), "{system}");
    // The full prompt is still there for who asks for it, and is the larger.
    let (full, full_tokens) = run_14a(Some(PromptSize::Full));
    assert!(content(&full[0], 0).contains("\"parameters\""));
    assert!(
        full_tokens[0] > 2 * first,
        "full {} against compact {first}",
        full_tokens[0]
    );
}

#[test]
fn consecutive_decisions_share_a_byte_identical_prefix_up_to_the_state() {
    for size in [PromptSize::Compact, PromptSize::Full] {
        let (decide, _) = run_14a(Some(size));
        assert!(
            decide.len() >= 3,
            "{size:?}: {} decide requests",
            decide.len()
        );
        for pair in decide.windows(2) {
            let (a, b) = (&pair[0].body, &pair[1].body);
            // What a chat template renders first — the tools, the system
            // prompt with the skills — does not change from step to step.
            assert_eq!(a["tools"], b["tools"], "{size:?}");
            assert_eq!(a["messages"][0], b["messages"][0], "{size:?}");
            assert_eq!(a["messages"].as_array().unwrap().len(), 2, "{size:?}: {a}");
            // The state is last, and it is what differs.
            let (ua, ub) = (content(&pair[0], 1), content(&pair[1], 1));
            assert_ne!(ua, ub, "{size:?}: the state did not move");
            let state = ua.find("Observation (JSON):\n").unwrap();
            let shared = common_prefix(&prompt_text(a), &prompt_text(b));
            let before_state = prompt_text(a).len() - ua.len() + state;
            assert!(
                shared >= before_state,
                "{size:?}: the prompts part at byte {shared}, before the state at {before_state}"
            );
        }
    }
}

/// The request as a chat template lays it out: the tools, then each
/// message's text in order.
fn prompt_text(body: &Value) -> String {
    let mut text = body["tools"].to_string();
    for m in body["messages"].as_array().unwrap() {
        text.push('\n');
        text.push_str(m["content"].as_str().unwrap());
    }
    text
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}
