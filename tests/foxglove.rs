//! Runs as MCAP files for Foxglove (docs/foxglove.md), read back with the
//! MCAP project's own reader — PyPI `mcap`, installed by `./x setup` into
//! the test virtualenv, run as `$ROBOBRAIN_PYTHON` (else the virtualenv's
//! python) — not with the crate that wrote them: `--mcap` on a lockstep
//! run (`headless --fast`, `demo`) and on a started one (`headless` at
//! real-time pace, the session's recorder), and `export mcap` of a log.
//! Each recording must have every channel with its schema, every event of
//! the JSONL log on its kind's channel as logged, and the views' counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use robobrain_core::protocol::Event;
use serde_json::Value;

use crate::support::{robobrain, root, temp_dir};

/// The version `./x setup` installs.
const PY_MCAP: &str = "1.6.0";

fn python() -> String {
    std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/robobrain/py/bin/python")
    })
}

/// What PyPI's `mcap` reads in `file` (tests/fixtures/foxglove/read_mcap.py).
fn read_back(file: &Path) -> Value {
    let py = python();
    let script = root().join("tests/fixtures/foxglove/read_mcap.py");
    let out = Command::new(&py)
        .arg(&script)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {py}: {e}; run `./x setup` (it creates the test virtualenv ~/.cache/robobrain/py)"));
    assert!(
        out.status.success(),
        "{py} {} {} failed: {}\ninstall the reader with `~/.cache/robobrain/py/bin/pip install mcap=={PY_MCAP}` (./x setup does)",
        script.display(),
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The kinds of event robobrain.json gives a channel.
fn kinds() -> Vec<String> {
    let text =
        std::fs::read_to_string(root().join("assets/foxglove/schemas/robobrain.json")).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    file["events"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// The views: topic, schema name.
const VIEWS: [(&str, &str); 5] = [
    ("/robot/pose", "foxglove.PoseInFrame"),
    ("/robot/battery", "robobrain.Battery"),
    ("/log", "foxglove.Log"),
    ("/map", "foxglove.SceneUpdate"),
    ("/camera/evidence", "foxglove.CompressedImage"),
];

/// Checks that `mcap` (as read back) records exactly the events of the
/// JSONL log `log`; returns the summary's counts per topic (topics with
/// messages only).
fn check_recording(mcap: &Value, log: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let events: Vec<Event> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!events.is_empty(), "{}: empty log", log.display());

    // Channels: one per kind of event, then the views; JSON, JSON Schema.
    let channels = mcap["channels"].as_array().unwrap();
    let mut want: Vec<(String, String)> = kinds()
        .iter()
        .map(|k| (format!("/events/{k}"), String::new()))
        .collect();
    want.extend(
        VIEWS
            .iter()
            .map(|(t, s)| ((*t).to_string(), (*s).to_string())),
    );
    let topics: Vec<&str> = channels
        .iter()
        .map(|c| c["topic"].as_str().unwrap())
        .collect();
    assert_eq!(
        topics,
        want.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>()
    );
    for (c, (_, schema)) in channels.iter().zip(&want) {
        assert_eq!(c["message_encoding"], "json", "{c}");
        assert_eq!(c["schema_encoding"], "jsonschema", "{}", c["topic"]);
        assert_eq!(c["schema"]["type"], "object", "{}", c["topic"]);
        let name = c["schema_name"].as_str().unwrap();
        if schema.is_empty() {
            assert!(name.starts_with("robobrain."), "{}: {name}", c["topic"]);
        } else {
            assert_eq!(name, schema);
        }
    }

    // Counts, from the summary, and from the messages themselves.
    let counts: BTreeMap<String, u64> = serde_json::from_value(mcap["counts"].clone()).unwrap();
    let messages = mcap["messages"].as_array().unwrap();
    assert_eq!(
        mcap["message_count"].as_u64().unwrap(),
        messages.len() as u64
    );
    let count = |topic: &str| messages.iter().filter(|m| m["topic"] == topic).count() as u64;
    for (topic, n) in &counts {
        assert_eq!(
            *n,
            count(topic),
            "{topic}: the summary's count is not the messages'"
        );
    }
    let of_kind = |names: &[&str]| {
        events
            .iter()
            .filter(|e| names.contains(&e.kind.name()))
            .count() as u64
    };
    for kind in kinds() {
        assert_eq!(
            count(&format!("/events/{kind}")),
            of_kind(&[kind.as_str()]),
            "/events/{kind}"
        );
    }
    assert_eq!(count("/robot/pose"), of_kind(&["telemetry"]));
    assert_eq!(count("/robot/battery"), of_kind(&["telemetry"]));
    assert_eq!(count("/log"), of_kind(&["log", "error", "decision"]));
    assert_eq!(count("/map"), 1, "the map, once");

    // Every event as logged: its channel, its seq, its sim time, its JSON.
    let on_events: Vec<&Value> = messages
        .iter()
        .filter(|m| m["topic"].as_str().unwrap().starts_with("/events/"))
        .collect();
    assert_eq!(on_events.len(), events.len());
    let mut by_seq: Vec<&&Value> = on_events.iter().collect();
    by_seq.sort_by_key(|m| m["sequence"].as_u64().unwrap());
    for ((event, line), m) in events.iter().zip(&lines).zip(by_seq) {
        assert_eq!(m["topic"], format!("/events/{}", event.kind.name()));
        assert_eq!(m["sequence"].as_u64().unwrap(), event.seq);
        let ns = (event.time * 1e9).round() as u64;
        assert_eq!(m["log_time"].as_u64().unwrap(), ns, "seq {}", event.seq);
        assert_eq!(m["publish_time"].as_u64().unwrap(), ns);
        let logged: Value = serde_json::from_str(line).unwrap();
        assert_eq!(m["data"], logged, "seq {}", event.seq);
    }

    // The views' messages are what Foxglove's panels read.
    let first_pose = messages
        .iter()
        .find(|m| m["topic"] == "/robot/pose")
        .unwrap();
    assert_eq!(first_pose["data"]["frame_id"], "map");
    assert!(first_pose["data"]["pose"]["orientation"]["w"].is_number());
    let battery = messages
        .iter()
        .find(|m| m["topic"] == "/robot/battery")
        .unwrap();
    assert!(battery["data"]["battery_pct"].is_number());
    let map = messages.iter().find(|m| m["topic"] == "/map").unwrap();
    assert!(
        map["data"]["entities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == "walls")
    );
    let meta = &mcap["metadata"][0];
    assert_eq!(meta["name"], "robobrain");
    assert_eq!(meta["metadata"]["thread_id"], events[0].thread_id);
    counts
}

#[test]
fn headless_fast_records_its_run_as_mcap_for_foxglove() {
    let dir = temp_dir("mcap-headless");
    let (log, mcap) = (dir.join("run.jsonl"), dir.join("run.mcap"));
    let out = robobrain(
        &[
            "headless",
            "--fast",
            "--duration",
            "120",
            "--say",
            "巡逻一次",
            "--log",
            log.to_str().unwrap(),
            "--mcap",
            mcap.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let counts = check_recording(&read_back(&mcap), &log);
    for topic in ["/events/decision", "/events/mode", "/robot/pose"] {
        assert!(
            counts.get(topic).is_some_and(|n| *n > 0),
            "{topic}: {counts:?}"
        );
    }
}

#[test]
fn the_demo_records_its_run_and_its_evidence_frame_and_export_rebuilds_it() {
    let dir = temp_dir("mcap-demo");
    let (log, live) = (dir.join("demo.jsonl"), dir.join("demo.mcap"));
    let out = robobrain(
        &[
            "demo",
            "--fast",
            "--log",
            log.to_str().unwrap(),
            "--mcap",
            live.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains(&format!("MCAP recording: {}", live.display())),
        "{}",
        out.stdout
    );
    let recorded = read_back(&live);
    let counts = check_recording(&recorded, &log);
    for kind in ["decision", "speech", "alert", "mode", "fault"] {
        let topic = format!("/events/{kind}");
        assert!(
            counts.get(&topic).is_some_and(|n| *n > 0),
            "{kind}: {counts:?}"
        );
    }
    // The smoke alert's evidence frame, a PNG, as a foxglove.CompressedImage.
    assert_eq!(counts.get("/camera/evidence"), Some(&1), "{counts:?}");
    let image = recorded["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["topic"] == "/camera/evidence")
        .unwrap();
    assert_eq!(image["data"]["format"], "png");
    assert!(
        image["data"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo"),
        "base64 of a PNG"
    );

    // `export mcap` of the same log: the same channels and counts.
    let exported = dir.join("exported.mcap");
    let out = robobrain(
        &[
            "export",
            "mcap",
            log.to_str().unwrap(),
            "-o",
            exported.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("wrote "), "{}", out.stderr);
    let again = check_recording(&read_back(&exported), &log);
    assert_eq!(again, counts, "export gives what the live run recorded");
}

#[test]
fn a_started_run_records_mcap_through_its_recorder() {
    let dir = temp_dir("mcap-started");
    let (log, mcap) = (dir.join("run.jsonl"), dir.join("run.mcap"));
    // Real-time pace (fast): the session's recorder task writes both logs.
    let out = robobrain(
        &[
            "headless",
            "--speed",
            "40",
            "--duration",
            "20",
            "--say",
            "去厨房",
            "--log",
            log.to_str().unwrap(),
            "--mcap",
            mcap.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let counts = check_recording(&read_back(&mcap), &log);
    assert!(
        counts.get("/events/telemetry").is_some_and(|n| *n > 0),
        "{counts:?}"
    );
}

#[test]
fn export_names_the_file_and_line_of_a_malformed_log() {
    let dir = temp_dir("mcap-malformed");
    let log = dir.join("bad.jsonl");
    let good = r#"{"seq":1,"time":0.0,"wall_ms":0,"thread_id":"t","step":0,"kind":"log","level":"info","message":"hi"}"#;
    std::fs::write(&log, format!("{good}\n{{\"seq\": 2, \"kind\": \"log\"\n")).unwrap();
    let mcap: PathBuf = dir.join("bad.mcap");
    let out = robobrain(
        &[
            "export",
            "mcap",
            log.to_str().unwrap(),
            "-o",
            mcap.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let first = out.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "error: {}:2: expected one event as JSON per line",
            log.display()
        )),
        "{}",
        out.stderr
    );
    assert!(!mcap.exists(), "nothing is written");
}

/// `serve --mcap`: the run is recorded until the server is stopped
/// (SIGTERM), when the session closes the recording.
#[test]
fn serve_records_its_run_until_it_is_stopped() {
    let dir = temp_dir("mcap-serve");
    let (log, mcap) = (dir.join("serve.jsonl"), dir.join("serve.mcap"));
    let child = crate::support::start(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--speed",
            "20",
            "--say",
            "去厨房",
            "--log",
            log.to_str().unwrap(),
            "--mcap",
            mcap.to_str().unwrap(),
        ],
        &[],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains(r#""kind":"telemetry""#)) {
        assert!(
            std::time::Instant::now() < deadline,
            "serve logged no telemetry in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts = check_recording(&read_back(&mcap), &log);
    assert!(
        counts.get("/events/telemetry").is_some_and(|n| *n > 0),
        "{counts:?}"
    );
}
