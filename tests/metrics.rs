//! `robobrain serve`'s `/metrics` and `/healthz` from outside: the real
//! binary on loopback, a model (mock-llm) and memory configured, a command
//! given over the WebSocket; each scrape parsed by PyPI `prometheus-client`'s
//! own parser (`$ROBOBRAIN_PYTHON`, installed by `./x setup`), and the
//! counters seen moving. `/healthz` answers 200 while the robot is there
//! and 503 once its process (`robobrain sim --listen`) is gone.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use crate::sim_process::SimProcess;
use crate::support::{root, temp_dir};
use crate::web::serve_with;

/// `GET path` on `addr` with these extra header lines; (status, body).
fn get(addr: &str, path: &str, headers: &[&str]) -> (u16, String) {
    crate::web::get_as(addr, Some(addr), path, headers)
}

/// The interpreter with the test packages (`./x setup` makes it).
fn python() -> String {
    std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/robobrain/py/bin/python")
    })
}

/// `text` parsed by prometheus-client: family name → `{type, samples}`.
fn parse(text: &str) -> Value {
    let py = python();
    let mut child = Command::new(&py)
        .arg(root().join("tests/fixtures/prometheus_parse.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {py}: {e}; run `./x setup` (it creates the test virtualenv ~/.cache/robobrain/py)"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus-client refused the text (is PyPI `prometheus-client` installed in {py}? `./x setup`):\n{}\n--- the text:\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample `name` with these labels in a parsed family.
fn sample(families: &Value, family: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    families[family]["samples"]
        .as_array()?
        .iter()
        .find(|s| {
            s["name"] == name
                && labels
                    .iter()
                    .all(|(k, v)| s["labels"][*k].as_str() == Some(*v))
        })
        .and_then(|s| s["value"].as_f64())
}

/// Every sample of a family, added up.
fn sum(families: &Value, family: &str, name: &str) -> f64 {
    families[family]["samples"]
        .as_array()
        .map_or(0.0, |samples| {
            samples
                .iter()
                .filter(|s| s["name"] == name)
                .filter_map(|s| s["value"].as_f64())
                .sum()
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_prometheus_text_and_move_with_the_run() {
    let dir = temp_dir("metrics");
    // The model sends the robot to the study, a restricted zone: the op waits for approval.
    let model = crate::support::mock_model(
        &dir,
        "[[reply]]\ndecision = { type = \"CONTINUE\", reason = \"model: the study\", ops = [{ op = \"dispatch\", skill = \"navigate_to\", args = { zone = \"study\" } }] }\n",
    );
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            "runs_dir = {runs:?}\n[llm]\nbase_url = {url:?}\napi_key = \"metrics-key\"\n[memory]\nenabled = true\nmodel_dir = {no_model:?}\n[speech]\nvoice = \"text\"\n",
            runs = dir.join("runs").display().to_string(),
            url = model.base_url(),
            no_model = dir.join("no-model").display().to_string(),
        ),
    )
    .unwrap();
    let server = serve_with(&config, &[], 10.0);
    let addr = server.addr.clone();

    let (status, health) = get(&addr, "/healthz", &[]);
    assert_eq!(status, 200, "{health}");
    let health: Value = serde_json::from_str(&health).unwrap();
    assert_eq!(
        (&health["status"], &health["kernel"], &health["link"]),
        (&"ok".into(), &"running".into(), &"up".into())
    );

    let (status, first) = get(&addr, "/metrics", &[]);
    assert_eq!(status, 200, "{first}");
    let before = parse(&first);
    for (family, kind) in [
        ("robobrain_kernel_tick_seconds", "histogram"),
        ("robobrain_events", "counter"),
        ("robobrain_model_calls", "counter"),
        ("robobrain_model_tokens", "counter"),
        ("robobrain_approvals_waiting", "gauge"),
        ("robobrain_robot_link_up", "gauge"),
        ("robobrain_memory_items", "gauge"),
        ("robobrain_kernel_up", "gauge"),
        ("robobrain_battery_percent", "gauge"),
        ("robobrain_sim_time_seconds", "gauge"),
        ("robobrain_run_info", "gauge"),
    ] {
        assert_eq!(before[family]["type"], kind, "{family} in {before}");
    }
    assert_eq!(
        sample(
            &before,
            "robobrain_robot_link_up",
            "robobrain_robot_link_up",
            &[]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &before,
            "robobrain_run_info",
            "robobrain_run_info",
            &[
                ("brain", "model qwen-max"),
                ("memory", "bm25"),
                ("robot", "sim:")
            ]
        ),
        Some(1.0),
        "{}",
        before["robobrain_run_info"]
    );
    let events_before = sum(&before, "robobrain_events", "robobrain_events_total");
    let ticks_before = sample(
        &before,
        "robobrain_kernel_tick_seconds",
        "robobrain_kernel_tick_seconds_count",
        &[],
    )
    .unwrap();

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap();
    ws.send(Message::Text("go to the study".into()))
        .await
        .unwrap();

    // Scraped until the approval waits (bounded: the run is at 10× real time).
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        let (status, text) = get(&addr, "/metrics", &[]);
        assert_eq!(status, 200);
        let families = parse(&text);
        let waiting = sample(
            &families,
            "robobrain_approvals_waiting",
            "robobrain_approvals_waiting",
            &[],
        );
        if waiting == Some(1.0) {
            break families;
        }
        assert!(
            Instant::now() < deadline,
            "no approval waiting within 60 s:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let events_after = sum(&after, "robobrain_events", "robobrain_events_total");
    assert!(
        events_after > events_before,
        "{events_before} → {events_after}"
    );
    for kind in ["intent", "task", "decision", "approval", "llm_call"] {
        assert!(
            sample(
                &after,
                "robobrain_events",
                "robobrain_events_total",
                &[("kind", kind)]
            )
            .is_some_and(|n| n >= 1.0),
            "no {kind} event counted: {}",
            after["robobrain_events"]
        );
    }
    let ticks_after = sample(
        &after,
        "robobrain_kernel_tick_seconds",
        "robobrain_kernel_tick_seconds_count",
        &[],
    )
    .unwrap();
    assert!(ticks_after > ticks_before, "{ticks_before} → {ticks_after}");
    assert_eq!(
        sample(
            &after,
            "robobrain_kernel_tick_seconds",
            "robobrain_kernel_tick_seconds_bucket",
            &[("le", "+Inf")]
        ),
        Some(ticks_after),
        "the +Inf bucket holds every tick"
    );
    assert!(
        sample(
            &after,
            "robobrain_model_calls",
            "robobrain_model_calls_total",
            &[("purpose", "decide"), ("outcome", "ok")]
        )
        .is_some_and(|n| n >= 1.0),
        "{}",
        after["robobrain_model_calls"]
    );
    for kind in ["prompt", "completion"] {
        assert!(
            sample(
                &after,
                "robobrain_model_tokens",
                "robobrain_model_tokens_total",
                &[("kind", kind)]
            )
            .is_some_and(|n| n > 0.0),
            "{}",
            after["robobrain_model_tokens"]
        );
    }
    // What was said is remembered (the memory thread reports after each message).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let families = parse(&get(&addr, "/metrics", &[]).1);
        let messages = sample(
            &families,
            "robobrain_memory_items",
            "robobrain_memory_items",
            &[("kind", "messages")],
        );
        if messages.is_some_and(|n| n >= 1.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nothing remembered: {}",
            families["robobrain_memory_items"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(ws);
    drop(server);
    drop(model);
}

#[test]
fn with_a_token_metrics_need_it_and_healthz_does_not() {
    let dir = temp_dir("metrics-token");
    let config = crate::support::quiet_config(&dir);
    let server = serve_with(
        &config,
        &["--token", "op-secret", "--viewer-token", "look"],
        1.0,
    );
    let (status, body) = get(&server.addr, "/metrics", &[]);
    assert_eq!(status, 401, "{body}");
    let (status, _) = get(&server.addr, "/metrics", &["Authorization: Bearer guess"]);
    assert_eq!(status, 401);
    for token in ["op-secret", "look"] {
        let (status, body) = get(
            &server.addr,
            "/metrics",
            &[&format!("Authorization: Bearer {token}")],
        );
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains("# TYPE robobrain_events_total counter"),
            "{body}"
        );
    }
    let (status, body) = get(&server.addr, "/healthz", &[]);
    assert_eq!(status, 200, "{body}");
}

/// A `tcp://` robot that goes away: `/healthz` turns 503 with `link: down`
/// and `/metrics` says the link is down.
#[test]
fn healthz_is_503_while_the_robot_link_is_down() {
    let dir = temp_dir("metrics-link");
    let sim = SimProcess::start(&dir.join("sim.jsonl"), "1", &[]);
    let config = crate::support::quiet_config(&dir);
    let server = serve_with(&config, &["--robot", &sim.url], 1.0);
    let (status, body) = get(&server.addr, "/healthz", &[]);
    assert_eq!(status, 200, "{body}");
    drop(sim);
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = loop {
        let (status, body) = get(&server.addr, "/healthz", &[]);
        if status == 503 {
            break body;
        }
        assert_eq!(status, 200, "{body}");
        assert!(
            Instant::now() < deadline,
            "still healthy 30 s after the robot went away: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "unavailable", "{health}");
    assert_eq!(health["kernel"], "running", "{health}");
    assert_eq!(health["link"], "down", "{health}");
    let families = parse(&get(&server.addr, "/metrics", &[]).1);
    assert_eq!(
        sample(
            &families,
            "robobrain_robot_link_up",
            "robobrain_robot_link_up",
            &[]
        ),
        Some(0.0)
    );
}
