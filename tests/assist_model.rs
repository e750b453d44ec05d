//! `robobrain assist --model` (issue 40 item 6) against mock-llm on
//! loopback: only what the grammar and the rules miss goes to the model;
//! the model's calls are checked by the device world and a high-risk one is
//! confirmed; the report says what the model contributed.

use std::path::Path;

use robobrain_core::llm::mock_script;
use robobrain_core::llm::mock_server::MockServer;
use serde_json::Value;

use crate::support::{robobrain, robobrain_env, temp_dir};

const HOME: &str = "areas:
  - {name: Entry, id: entry}
  - {name: Office, id: office}
entities:
  - {name: Front Door, id: lock.front_door, area: entry, state: locked}
  - {name: Desk Lamp, id: light.desk_lamp, area: office, state: \"off\"}
";

/// One sentence the rules understand, three they miss: the model turns the
/// lamp on (passes), unlocks the door (passes, confirmed), and asks for an
/// action the lamp does not have (refused: fails).
const TESTS: &str = "category: mixed
tests:
  - sentences: [Turn on the desk lamp, I cannot see a thing]
    setup:
      light.desk_lamp: {state: \"off\"}
    expect_changes:
      light.desk_lamp: {state: \"on\"}
    ignore_changes:
      light.desk_lamp: [brightness, color_mode]
  - sentences: [Let my sister in]
    setup:
      lock.front_door: {state: locked}
    expect_changes:
      lock.front_door: {state: unlocked}
  - sentences: [Something cosy please]
    setup:
      light.desk_lamp: {state: \"off\"}
    expect_changes:
      light.desk_lamp: {state: \"on\"}
";

/// What the model answers, each only to its own sentence.
const SCRIPT: &str = r#"
[[reply]]
when = { contains = "I cannot see a thing" }
tool_calls = [{ name = "invoke", arguments = { device = "light.desk_lamp", action = "turn_on" } }]

[[reply]]
when = { contains = "Let my sister in" }
tool_calls = [{ name = "invoke", arguments = { device = "lock.front_door", action = "unlock" } }]

[[reply]]
when = { contains = "Something cosy please" }
tool_calls = [{ name = "invoke", arguments = { device = "light.desk_lamp", action = "make_cosy" } }]
"#;

/// A fresh mock-llm playing [`SCRIPT`].
fn model(dir: &Path) -> MockServer {
    let path = dir.join("model.toml");
    std::fs::write(&path, SCRIPT).unwrap();
    MockServer::start(mock_script::load(&path).unwrap(), "127.0.0.1:0").unwrap()
}

/// `robobrain assist --dataset DIR --model ARGS…` against `server`.
fn assist(dir: &Path, server: &MockServer, args: &[&str]) -> crate::support::Output {
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "assist-model-key"),
    ];
    let mut all = vec!["assist", "--dataset", dir.to_str().unwrap(), "--model"];
    all.extend_from_slice(args);
    robobrain_env(&all, &env)
}

#[test]
fn what_the_rules_miss_goes_to_the_model_and_the_report_says_what_it_did() {
    let dir = temp_dir("assist-model");
    let home = dir.join("home1-us-mixed");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("_fixtures.yaml"), HOME).unwrap();
    std::fs::write(home.join("mixed.yaml"), TESTS).unwrap();
    let server = model(&dir);
    let out = assist(&dir, &server, &["--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    let by = |sentence: &str| {
        results
            .iter()
            .find(|r| r["sentence"] == sentence)
            .unwrap_or_else(|| panic!("no {sentence:?} in {report}"))
    };
    // The rules' own sentence never reached the model.
    let ruled = by("Turn on the desk lamp");
    assert_eq!(ruled["passed"], true, "{ruled}");
    assert!(ruled["turn"].get("model").is_none(), "{ruled}");
    let dark = by("I cannot see a thing");
    assert_eq!(dark["passed"], true, "{dark}");
    assert_eq!(dark["turn"]["model"]["outcome"], "ok");
    assert_eq!(dark["turn"]["model"]["calls"], 1);
    let door = by("Let my sister in");
    assert_eq!(door["passed"], true, "{door}");
    assert_eq!(
        door["turn"]["confirmations"], 1,
        "a high-risk call asks first"
    );
    let cosy = by("Something cosy please");
    assert_eq!(cosy["passed"], false);
    assert_eq!(cosy["turn"]["model"]["refused"], 1, "{cosy}");
    assert!(
        cosy["reason"].as_str().unwrap().contains("make_cosy"),
        "{cosy}"
    );
    let used = &report["model"];
    assert_eq!(used["sentences"], 3, "{used}");
    assert_eq!(used["passed"], 2);
    assert_eq!(used["failed"], 1);
    assert_eq!(used["device_calls"], 3);
    assert_eq!(used["refused"], 1);
    assert_eq!(used["call_errors"], 0);
    assert_eq!(
        server.received().len(),
        3,
        "one request per missed sentence"
    );
    assert_eq!(report["assistant"], "engine+model");

    // The table ends with the model's lines.
    let table = assist(&dir, &model(&dir), &[]);
    assert!(
        table
            .stdout
            .contains("model: took 3 of 4 sentences (the rules missed them): 2 passed, 1 failed"),
        "{}",
        table.stdout
    );
}

#[test]
fn assist_model_without_a_model_says_how_to_configure_one() {
    let dir = robobrain_core::testing::test_data("home-assistant-datasets/assist-mini");
    let out = robobrain(
        &["assist", "--dataset", dir.to_str().unwrap(), "--model"],
        "",
    );
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("no model is configured: set [llm] base_url"),
        "{}",
        out.stderr
    );
}
