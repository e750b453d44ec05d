//! End-to-end tests of the `robobrain` binary (the `e2e` test of the
//! `robobrain-tui` crate): every scenario in `tests/scenarios/`, the demo,
//! malformed scenario files, the headless JSONL stream, the console in
//! tmux (`console.rs`), and `robobrain mcp` with the rmcp client (`mcp.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod console;
mod durable;
mod llm;
mod mcp;
mod memory;
mod support;
mod web;

use std::path::Path;

use robobrain_core::protocol::Event;
use robobrain_core::scenario;
use support::{robobrain, root, temp_dir, toml_files};

/// Runs one scenario file and asserts it passed, showing the report if not.
fn scenario_passes(file: &str) {
    let path = format!("tests/scenarios/{file}");
    let logs = temp_dir(file.trim_end_matches(".toml"));
    let out = robobrain(
        &["scenario", &path, "--log-dir", logs.to_str().unwrap()],
        "",
    );
    assert_eq!(
        out.code, 0,
        "{path} failed\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout, out.stderr
    );
    let name = scenario::load(&root().join(&path)).unwrap().name;
    let log = robobrain_core::eventlog::read(&logs.join(format!("{name}.jsonl"))).unwrap();
    assert!(!log.is_empty(), "{path}: the event log is empty");
}

macro_rules! scenario_tests {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                scenario_passes($file);
            }
        )*

        /// Every file in tests/scenarios has a test above.
        #[test]
        fn every_scenario_file_has_a_test() {
            let listed = [$($file),*];
            for file in toml_files("tests/scenarios") {
                assert!(listed.contains(&file.as_str()), "add {file} to scenario_tests!");
            }
        }
    };
}

scenario_tests! {
    scenario_01_goto_success => "01_goto_success.toml",
    scenario_02a_blocked_replan_success => "02a_blocked_replan_success.toml",
    scenario_02b_blocked_no_path_ask_human => "02b_blocked_no_path_ask_human.toml",
    scenario_03_low_battery_charge_preempts => "03_low_battery_charge_preempts.toml",
    scenario_04_user_inserts_goal => "04_user_inserts_goal.toml",
    scenario_05a_approval_approve => "05a_approval_approve.toml",
    scenario_05b_approval_edit => "05b_approval_edit.toml",
    scenario_05c_approval_reject => "05c_approval_reject.toml",
    scenario_06_estop => "06_estop.toml",
    scenario_07_iteration_cap => "07_iteration_cap.toml",
    scenario_08_repeated_failure => "08_repeated_failure.toml",
    scenario_09_no_progress => "09_no_progress.toml",
    scenario_10_unknown_place_asks => "10_unknown_place_asks.toml",
    scenario_11_llm_blocked_replan => "11_llm_blocked_replan.toml",
    scenario_12_smoke_alert => "12_smoke_alert.toml",
    scenario_13_camera_fails => "13_camera_fails.toml",
}

#[test]
fn every_shipped_scenario_parses() {
    let mut files: Vec<String> = toml_files("tests/scenarios")
        .into_iter()
        .map(|f| format!("tests/scenarios/{f}"))
        .collect();
    files.extend(
        toml_files("assets/scenarios")
            .into_iter()
            .map(|f| format!("assets/scenarios/{f}")),
    );
    assert!(files.len() > 10);
    for file in files {
        let s = scenario::load(&root().join(&file)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.steps.is_empty(), "{file}: no steps");
        assert!(
            !s.expects.is_empty() || !s.orders.is_empty(),
            "{file}: no expectations"
        );
    }
}

#[test]
fn malformed_scenarios_exit_2_with_the_exact_error() {
    let files = toml_files("tests/fixtures/invalid");
    assert!(files.len() >= 6);
    for file in files {
        let path = format!("tests/fixtures/invalid/{file}");
        let want = std::fs::read_to_string(root().join(path.replace(".toml", ".err"))).unwrap();
        let out = robobrain(&["scenario", &path], "");
        assert_eq!(out.code, 2, "{path}: {}", out.stderr);
        let first = out.stderr.lines().next().unwrap_or_default();
        assert_eq!(first, format!("error: {}", want.trim()), "{path}");
        assert!(out.stdout.is_empty(), "{path}: nothing may start");
    }
}

#[test]
fn one_malformed_file_means_nothing_runs() {
    let logs = temp_dir("nothing-runs");
    let out = robobrain(
        &[
            "scenario",
            "tests/scenarios/01_goto_success.toml",
            "tests/fixtures/invalid/two_verbs.toml",
            "--log-dir",
            logs.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("nothing was run"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 0);
}

#[test]
fn bad_arguments_are_refused() {
    let out = robobrain(&["scenario"], "");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("FILE"), "{}", out.stderr);
    let out = robobrain(&["demo", "--speed", "0"], "");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--speed"), "{}", out.stderr);
    let out = robobrain(&["--config", "tests/fixtures/missing.toml", "demo"], "");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing.toml"), "{}", out.stderr);
}

#[test]
fn demo_runs_and_tells_the_story() {
    let logs = temp_dir("demo");
    let log = logs.join("demo.jsonl");
    let out = robobrain(&["demo", "--fast", "--log", log.to_str().unwrap()], "");
    assert_eq!(
        out.code, 0,
        "--- stdout\n{}\n--- stderr\n{}",
        out.stdout, out.stderr
    );
    for word in ["MODE", "DECISION", "REPLAN", "CHARGE", "PASS"] {
        assert!(out.stdout.contains(word), "no {word} in\n{}", out.stdout);
    }
    assert!(
        !out.stdout.contains("\x1b["),
        "NO_COLOR must turn colours off"
    );
    assert!(!robobrain_core::eventlog::read(&log).unwrap().is_empty());
}

#[test]
fn headless_streams_jsonl_and_takes_commands_on_stdin() {
    let logs = temp_dir("headless");
    let log = logs.join("headless.jsonl");
    let stdin = "{\"cmd\":\"say\",\"text\":\"去厨房\"}\n{\"cmd\":\"fly\"}\n";
    let out = robobrain(
        &[
            "headless",
            "--fast",
            "--duration",
            "30",
            "--log",
            log.to_str().unwrap(),
        ],
        stdin,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let bad: serde_json::Value = serde_json::from_str(out.stderr.lines().next().unwrap()).unwrap();
    assert_eq!(bad["kind"], "error");
    assert_eq!(bad["line"], 2);
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("expected a command")
    );
    let events: Vec<Event> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(events.iter().all(|e| e.time <= 30.0 + 1e-9));
    assert!(
        events.iter().any(|e| e.kind.name() == "intent"),
        "the said command was not understood:\n{}",
        out.stdout
    );
    assert_eq!(robobrain_core::eventlog::read(&log).unwrap(), events);
    assert!(Path::new(&log).exists());
}
