//! End-to-end tests of the `robobrain` binary (the `e2e` test of the
//! `robobrain-tui` crate): every scenario in `tests/scenarios/`, the demo,
//! malformed scenario files, the headless JSONL stream, the console in
//! tmux (`console.rs`), `robobrain mcp` with the rmcp client (`mcp.rs`),
//! one run through every face, with `tui --connect` (`faces.rs`), and the
//! ROS 2 link against a Cyclone DDS fake Nav2 (`ros2.rs`), what
//! `sim --listen` refuses (`sim_listen.rs`), and the same dangerous
//! requests through every door (`doors.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod assist;
mod assist_model;
mod bench_docs;
mod channel;
mod console;
mod crates;
mod doors;
mod durable;
mod faces;
mod fleet;
mod fleet_page;
mod foxglove;
mod fuzz_corpus;
mod intents;
mod llm;
mod llm_real;
mod mcp;
mod memory;
mod metrics;
mod prompt;
mod rest;
#[cfg(feature = "ros2")]
mod ros2;
mod sim_listen;
mod sim_process;
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
    scenario_14a_model_lies_finish => "14a_model_lies_finish.toml",
    scenario_14b_lie_abort => "14b_lie_abort.toml",
    scenario_14c_lie_switch_task => "14c_lie_switch_task.toml",
    scenario_14d_lie_retry => "14d_lie_retry.toml",
    scenario_14e_lie_continue => "14e_lie_continue.toml",
    scenario_14f_lie_replan_skip => "14f_lie_replan_skip.toml",
    scenario_h01_light_on_zh => "h01_light_on_zh.toml",
    scenario_h02_light_on_en => "h02_light_on_en.toml",
    scenario_h03_turn_it_off_zh => "h03_turn_it_off_zh.toml",
    scenario_h04_turn_it_off_en => "h04_turn_it_off_en.toml",
    scenario_h05_ambiguous_lamp_zh => "h05_ambiguous_lamp_zh.toml",
    scenario_h06_clarify_answer_zh => "h06_clarify_answer_zh.toml",
    scenario_h07_clarify_answer_en => "h07_clarify_answer_en.toml",
    scenario_h08_clarify_both_confirm => "h08_clarify_both_confirm.toml",
    scenario_h09_sleep_plan_confirm_zh => "h09_sleep_plan_confirm_zh.toml",
    scenario_h10_sleep_plan_reject_en => "h10_sleep_plan_reject_en.toml",
    scenario_h11_kettle_query_zh => "h11_kettle_query_zh.toml",
    scenario_h12_kettle_on_then_query_zh => "h12_kettle_on_then_query_zh.toml",
    scenario_h13_kettle_high_power_en => "h13_kettle_high_power_en.toml",
    scenario_h14_unlock_door_confirm_zh => "h14_unlock_door_confirm_zh.toml",
    scenario_h15_unlock_door_reject_en => "h15_unlock_door_reject_en.toml",
    scenario_h16_gas_valve_confirm_zh => "h16_gas_valve_confirm_zh.toml",
    scenario_h17_alarm_arm_en => "h17_alarm_arm_en.toml",
    scenario_h18_device_offline_zh => "h18_device_offline_zh.toml",
    scenario_h19_device_back_online_en => "h19_device_back_online_en.toml",
    scenario_h20_offline_in_plan_zh => "h20_offline_in_plan_zh.toml",
    scenario_h21_mixed_control_query_zh => "h21_mixed_control_query_zh.toml",
    scenario_h22_mixed_en => "h22_mixed_en.toml",
    scenario_h23_smile_brightness_zh => "h23_smile_brightness_zh.toml",
    scenario_h24_brightness_en => "h24_brightness_en.toml",
    scenario_h25_ac_temperature_zh => "h25_ac_temperature_zh.toml",
    scenario_h26_barge_in => "h26_barge_in.toml",
    scenario_h27_night_confirm => "h27_night_confirm.toml",
    scenario_h28_away_confirm => "h28_away_confirm.toml",
    scenario_h29_preference_edit => "h29_preference_edit.toml",
    scenario_h30_query_door_en => "h30_query_door_en.toml",
    scenario_h31_cannot_en => "h31_cannot_en.toml",
    scenario_h32_movie_scene_en => "h32_movie_scene_en.toml",
    scenario_h33_all_lights_off_zh => "h33_all_lights_off_zh.toml",
    scenario_h34_robot_intents_untouched_zh => "h34_robot_intents_untouched_zh.toml",
    scenario_h35_query_offline_en => "h35_query_offline_en.toml",
    scenario_h36_replies_in_chinese_zh => "h36_replies_in_chinese_zh.toml",
    scenario_h37_replies_in_english_en => "h37_replies_in_english_en.toml",
    scenario_h38_timers_en => "h38_timers_en.toml",
    scenario_h39_timers_zh => "h39_timers_zh.toml",
}

/// A build without the `ros2` feature refuses `ros2://` robots and says
/// how to build one that takes them (the tests of the link itself,
/// `ros2.rs`, run with the feature, as `./x test` builds).
#[cfg(not(feature = "ros2"))]
#[test]
fn a_build_without_ros2_says_how_to_get_it() {
    let out = robobrain(
        &["headless", "--robot", "ros2://?domain=7", "--duration", "1"],
        "",
    );
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("built without the ros2 feature"),
        "{}",
        out.stderr
    );
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
    let intent = events
        .iter()
        .find(|e| e.kind.name() == "intent")
        .unwrap_or_else(|| panic!("the said command was not understood:\n{}", out.stdout));
    // Where it came from, on its events and in the log.
    assert_eq!(
        intent.origin,
        Some(robobrain_core::protocol::Origin::headless()),
        "{intent:?}"
    );
    let task = events.iter().find(|e| e.kind.name() == "task").unwrap();
    assert_eq!(task.origin, intent.origin, "the task it queued");
    assert!(
        events[0].origin.is_none(),
        "the run's snapshot came from no command"
    );
    assert_eq!(robobrain_core::eventlog::read(&log).unwrap(), events);
    assert!(Path::new(&log).exists());
}

/// `robobrain audit` lists the audit table of a database and filters it.
#[test]
fn audit_lists_and_filters_the_rows() {
    use robobrain_core::store::audit::{AuditLog, AuditRow};
    let dir = temp_dir("audit");
    let db = dir.join("a.db");
    let _ = std::fs::remove_file(&db);
    let log = AuditLog::open(&db).unwrap();
    for (tool, ok, result) in [
        ("devices.invoke", true, "ok"),
        (
            "devices.invoke",
            false,
            "confirmation_required: unlock on front_door_lock (lock) is high risk",
        ),
        ("devices.get_state", true, "ok"),
    ] {
        log.record(&AuditRow {
            id: 0,
            at_ms: 1,
            trace_id: "t1".into(),
            session_id: "t1/s1".into(),
            plan_id: "p1".into(),
            step_id: "1".into(),
            tool: tool.into(),
            args_summary: "{}".into(),
            result: result.into(),
            ok,
            latency_us: 10,
            origin: "web: ws#2 127.0.0.1:40000".into(),
        })
        .unwrap();
    }
    drop(log);
    let db = db.to_str().unwrap();
    let out = robobrain(&["audit", "--db", db, "--failed", "--json"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{}", out.stdout);
    assert_eq!(rows[0]["origin"], "web: ws#2 127.0.0.1:40000");
    assert!(
        rows[0]["result"]
            .as_str()
            .unwrap()
            .starts_with("confirmation_required")
    );
    let out = robobrain(&["audit", "--db", db, "--tool", "get_state"], "");
    assert!(out.stdout.contains("devices.get_state"), "{}", out.stdout);
    assert!(
        out.stdout.contains("web: ws#2 127.0.0.1:40000"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("confirmation_required"),
        "{}",
        out.stdout
    );
    let out = robobrain(&["audit", "--db", &format!("{db}.missing")], "");
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("no database yet"), "{}", out.stderr);
}

/// `robobrain completions SHELL` gives each shell a script it loads and
/// completes with (the real bash, zsh and fish, installed by `./x setup`),
/// and `robobrain man` a page groff reads without a warning.
#[test]
fn completions_complete_in_real_shells_and_the_man_page_reads() {
    const INSTALL: &str = "./x setup (apt-get install bash zsh fish groff-base)";
    let bin = env!("CARGO_BIN_EXE_robobrain");
    let run = |name: &str, args: &[&str]| -> String {
        let out = std::process::Command::new(robobrain_core::testing::program(name, INSTALL))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shell = |name: &str, script: &str| run(name, &["-c", script]);
    let bash = shell(
        "bash",
        &format!(
            "source <({bin} completions bash); COMP_WORDS=(robobrain hea); COMP_CWORD=1; \
             _robobrain robobrain hea robobrain; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        ),
    );
    assert_eq!(bash.trim(), "headless");
    let fish = shell(
        "fish",
        &format!("source ({bin} completions fish | psub); complete -C'robobrain hea'"),
    );
    assert!(fish.starts_with("headless\t"), "{fish}");
    let zsh = shell(
        "zsh",
        &format!(
            "autoload -U compinit; compinit -u; source <({bin} completions zsh); print $_comps[robobrain]"
        ),
    );
    assert_eq!(zsh.trim(), "_robobrain");
    let page = robobrain(&["man"], "");
    assert_eq!(page.code, 0, "{}", page.stderr);
    assert!(page.stdout.contains(".TH robobrain 1"), "{}", page.stdout);
    let dir = temp_dir("man");
    let file = dir.join("robobrain.1");
    std::fs::write(&file, &page.stdout).unwrap();
    let text = run("groff", &["-man", "-Tutf8", "-ww", file.to_str().unwrap()]);
    for word in ["headless", "serve", "completions"] {
        assert!(text.contains(word), "{word} not in the man page:\n{text}");
    }
}

/// Config from `~/.config/robobrain/robobrain.toml` when there is no
/// `./robobrain.toml`, data in `~/.local/share/robobrain` unless the config
/// sets `runs_dir`; `robobrain paths` and `--help` say so (issue 25 item 2).
#[test]
fn config_and_data_live_in_the_xdg_folders() {
    let dir = temp_dir("xdg");
    let (cfg, data) = (dir.join("cfg"), dir.join("data"));
    let env = [
        ("HOME", dir.to_str().unwrap()),
        ("XDG_CONFIG_HOME", cfg.to_str().unwrap()),
        ("XDG_DATA_HOME", data.to_str().unwrap()),
    ];
    let paths = || {
        let out = support::robobrain_env(&["paths"], &env);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let row = |text: &str, what: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no {what} in\n{text}"));
        line[what.len()..].trim().to_string()
    };
    let user = cfg.join("robobrain/robobrain.toml");
    let home_data = data.join("robobrain");
    // The workspace root (the tests' working directory) has no robobrain.toml.
    assert!(!root().join("robobrain.toml").exists());
    let text = paths();
    assert_eq!(row(&text, "config file"), "none (built-in defaults)");
    assert_eq!(
        row(&text, "user config"),
        format!("{} (not there)", user.display())
    );
    assert_eq!(row(&text, "data"), home_data.display().to_string());
    assert_eq!(
        row(&text, "database"),
        home_data.join("robobrain.db").display().to_string()
    );
    // The user's file is read; the data stays in the XDG folder…
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "seed = 7\n").unwrap();
    let text = paths();
    assert_eq!(row(&text, "config file"), user.display().to_string());
    assert_eq!(row(&text, "data"), home_data.display().to_string());
    // …unless the file puts it elsewhere.
    let elsewhere = dir.join("elsewhere");
    std::fs::write(
        &user,
        format!("runs_dir = {:?}\n", elsewhere.to_str().unwrap()),
    )
    .unwrap();
    assert_eq!(row(&paths(), "data"), elsewhere.display().to_string());
    // A run's event log lands in the data folder.
    std::fs::remove_file(&user).unwrap();
    let run = support::robobrain_env(&["demo", "--fast"], &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let logs: Vec<_> = std::fs::read_dir(&home_data)
        .unwrap_or_else(|e| panic!("{}: {e}", home_data.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "one event log in {}", home_data.display());
    // --help names both places.
    let help = support::robobrain_env(&["--help"], &env);
    assert!(
        help.stdout.contains(&user.display().to_string()),
        "{}",
        help.stdout
    );
    assert!(
        help.stdout.contains(&home_data.display().to_string()),
        "{}",
        help.stdout
    );
}
