//! `robobrain serve`: the WebSocket protocol from a real client (hello, the
//! snapshot, live events, commands; viewers refused; resuming after the
//! last event seen; tokens and origins), and the page itself in headless
//! Chromium (ui/tests/e2e.mjs with playwright-core).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::{root, temp_dir};

/// A `robobrain serve` on a free loopback port; kills it when dropped.
pub(crate) struct Server {
    child: Child,
    /// `HOST:PORT`.
    pub(crate) addr: String,
    /// What it said on stderr before serving.
    pub(crate) said: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(name: &str, extra: &[&str]) -> Server {
    let dir = temp_dir(name);
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            "runs_dir = \"{}\"\n[policy]\napprove_risks = [\"low_write\", \"high_write\"]\n[speech]\nvoice = \"text\"\n",
            dir.join("runs").display()
        ),
    )
    .unwrap();
    serve_with(&config, extra, 20.0)
}

/// `robobrain --config CONFIG serve` at `speed` with `extra` flags, on a
/// free loopback port unless `extra` names one.
pub(crate) fn serve_with(config: &std::path::Path, extra: &[&str], speed: f64) -> Server {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .arg("--config")
        .arg(config)
        .args(["serve", "--speed", &speed.to_string()])
        .args(if extra.contains(&"--listen") {
            &[][..]
        } else {
            &["--listen", "127.0.0.1:0"][..]
        })
        .args(extra)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let addr = loop {
        let line = lines.next().expect("serve ended before serving").unwrap();
        if let Some(at) = line.find(" at http://") {
            break line[at + " at http://".len()..]
                .trim_end_matches('/')
                .to_string();
        }
        said.push(line);
    };
    std::thread::spawn(move || for _ in lines {});
    Server { child, addr, said }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(addr: &str, query: &str) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws{query}"))
        .await
        .unwrap();
    ws
}

/// The next JSON message, within 10 s.
async fn next(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("no message within 10 s")
            .expect("the socket closed")
            .unwrap();
        if let Message::Text(t) = m {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

/// Reads messages until one matches; returns it (and every event seen).
async fn until(ws: &mut Ws, seen: &mut Vec<Value>, pred: impl Fn(&Value) -> bool) -> Value {
    loop {
        let m = next(ws).await;
        if m["type"] == "event" {
            seen.push(m["event"].clone());
        }
        if pred(&m) {
            return m;
        }
    }
}

fn is_event(m: &Value, kind: &str) -> bool {
    m["type"] == "event" && m["event"]["kind"] == kind
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_drives_and_a_viewer_only_watches() {
    let server = serve("web-roles", &[]);
    let mut op = connect(&server.addr, "").await;
    let hello = next(&mut op).await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["role"], "operator");
    assert_eq!(hello["map"]["name"], "apartment");
    assert!(
        hello["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "navigate_to")
    );
    let snap = next(&mut op).await;
    assert_eq!(snap["type"], "snapshot");
    let first_seq = snap["snapshot"]["seq"].as_u64().unwrap();

    let mut viewer = connect(&server.addr, "?role=viewer").await;
    assert_eq!(next(&mut viewer).await["role"], "viewer");
    assert_eq!(next(&mut viewer).await["type"], "snapshot");

    op.send(Message::text("go to the kitchen")).await.unwrap();
    let mut seen = Vec::new();
    let asked = until(&mut op, &mut seen, |m| {
        is_event(m, "approval") && m["event"]["status"] == "requested"
    })
    .await;
    let id = asked["event"]["approval_id"].as_str().unwrap().to_string();

    // The viewer sees the same request, and its approve is refused.
    let mut vseen = Vec::new();
    until(&mut viewer, &mut vseen, |m| is_event(m, "approval")).await;
    viewer
        .send(Message::text(
            json!({"cmd": "approve", "approval_id": id}).to_string(),
        ))
        .await
        .unwrap();
    let refused = until(&mut viewer, &mut vseen, |m| m["type"] == "refused").await;
    assert!(
        refused["reason"].as_str().unwrap().contains("read-only"),
        "{refused}"
    );

    op.send(Message::text(
        json!({"cmd": "approve", "approval_id": id}).to_string(),
    ))
    .await
    .unwrap();
    let done = until(&mut op, &mut seen, |m| {
        is_event(m, "task") && m["event"]["task"]["status"] == "succeeded"
    })
    .await;
    assert_eq!(done["event"]["task"]["title"], "go to kitchen");
    let approvals: Vec<&Value> = seen
        .iter()
        .filter(|e| e["kind"] == "approval" && e["approval_id"] == id.as_str())
        .collect();
    assert_eq!(
        approvals.len(),
        2,
        "requested, then approved once — the viewer's approve did nothing"
    );
    assert_eq!(approvals[1]["status"], "approved");
    // Every event after the snapshot, in order, none twice.
    let seqs: Vec<u64> = seen.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs[0], first_seq + 1);
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "gaps or repeats: {seqs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_reconnects_gets_what_it_missed_and_nothing_twice() {
    let server = serve("web-resume", &["--say", "去厨房"]);
    let mut ws = connect(&server.addr, "").await;
    let hello = next(&mut ws).await;
    let thread = hello["thread_id"].as_str().unwrap().to_string();
    next(&mut ws).await;
    let mut seen = Vec::new();
    until(&mut ws, &mut seen, |m| m["type"] == "event").await;
    let last = seen.last().unwrap()["seq"].as_u64().unwrap();
    drop(ws);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut again = connect(&server.addr, &format!("?since={last}&thread={thread}")).await;
    assert_eq!(next(&mut again).await["type"], "hello");
    let first = next(&mut again).await;
    assert_eq!(
        first["type"], "event",
        "missed events, not a snapshot: {first}"
    );
    assert_eq!(first["event"]["seq"].as_u64().unwrap(), last + 1);
    // A page that saw another run (another thread) starts from a snapshot.
    let mut other = connect(&server.addr, &format!("?since={last}&thread=another-run")).await;
    next(&mut other).await;
    assert_eq!(next(&mut other).await["type"], "snapshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_origins_decide_who_connects() {
    // The operator's token from a file; the viewer's on the command line,
    // which works and is warned about.
    let token = temp_dir("web-tokens-file").join("token");
    std::fs::write(&token, "op-secret\n").unwrap();
    let server = serve(
        "web-tokens",
        &[
            "--listen",
            "0.0.0.0:0",
            "--token-file",
            token.to_str().unwrap(),
            "--viewer-token",
            "look",
        ],
    );
    let warned = server.said.join("\n");
    assert!(
        warned.contains("--viewer-token on the command line is visible to other users")
            && warned.contains("ROBOBRAIN_VIEWER_TOKEN"),
        "{warned}"
    );
    assert!(!warned.contains("warning: --token "), "{warned}");
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let addr = format!("127.0.0.1:{port}");
    let refused = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await;
    assert!(refused.is_err(), "no token, no connection");
    let mut viewer = connect(&addr, "?token=look").await;
    assert_eq!(next(&mut viewer).await["role"], "viewer");
    let mut op = connect(&addr, "?token=op-secret").await;
    assert_eq!(next(&mut op).await["role"], "operator");

    // On loopback, a page of another site cannot connect through the browser.
    let local = serve("web-origin", &["--listen", "127.0.0.1:0"]);
    let mut request = format!("ws://{}/ws", local.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Origin", "https://evil.example".parse().unwrap());
    assert!(tokio_tungstenite::connect_async(request).await.is_err());
    let mut request = format!("ws://{}/ws", local.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Origin", format!("http://{}", local.addr).parse().unwrap());
    assert!(tokio_tungstenite::connect_async(request).await.is_ok());

    // Beyond loopback without a token: refused at start, with the reason.
    let out = crate::support::robobrain(&["serve", "--listen", "0.0.0.0:0"], "");
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("needs --token"), "{}", out.stderr);
}

/// Debian's Chromium (the page's tests launch `/usr/bin/chromium`).
pub(crate) fn chromium() -> &'static Path {
    let path = Path::new("/usr/bin/chromium");
    robobrain_core::testing::require(
        "Chromium (/usr/bin/chromium)",
        "./x setup (Debian package chromium)",
        path.is_file().then_some(path),
    )
}

/// The page in headless Chromium (playwright-core; `./x test` installs both):
/// approve, reconnect, a viewer refused, and typing in the chat never
/// approving (only a click after the guard does).
#[test]
fn the_page_in_chromium_approves_reconnects_refuses_a_viewer_and_typing_never_approves() {
    chromium();
    let playwright = root().join("ui/node_modules/playwright-core");
    robobrain_core::testing::require(
        "the page's npm packages (playwright-core)",
        "./x setup (npm ci in ui/)",
        playwright.exists().then_some(()),
    );
    let artifacts = root().join("target/ui-artifacts");
    let out = std::process::Command::new("node")
        .arg("ui/tests/e2e.mjs")
        .current_dir(root())
        .env("ROBOBRAIN_BIN", env!("CARGO_BIN_EXE_robobrain"))
        .env("ROBOBRAIN_ARTIFACTS", &artifacts)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("6 passed, 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        artifacts.join("serve.png").exists(),
        "the screenshot is kept"
    );
}

/// `robobrain report` on a recorded run: a self-contained page that opens in
/// Chromium and shows the trajectory; a damaged log is named by line.
#[test]
fn a_recorded_run_becomes_a_report_that_chromium_shows() {
    let dir = temp_dir("report");
    let log = dir.join("demo.jsonl");
    let html = dir.join("report.html");
    let out = crate::support::robobrain(&["demo", "--fast", "--log", log.to_str().unwrap()], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = crate::support::robobrain(
        &[
            "report",
            log.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    let points = page
        .split("id=\"trajectory\" points=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map_or(0, |p| p.split(' ').count());
    assert!(points > 50, "the demo's trajectory has {points} points");
    assert!(
        page.contains("<td>smoke</td>"),
        "the demo's incident is listed"
    );
    assert!(
        !page.contains("<script") && !page.contains("http-equiv"),
        "self-contained"
    );

    {
        let chromium = chromium();
        let shot = root().join("target/ui-artifacts/report.png");
        std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&shot);
        let status = std::process::Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--window-size=1150,1400",
            ])
            .arg(format!("--user-data-dir={}", dir.join("profile").display()))
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", html.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let png = std::fs::read(&shot).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 20_000,
            "a real screenshot ({} bytes)",
            png.len()
        );
    }

    let damaged = dir.join("damaged.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{not an event\n");
    std::fs::write(&damaged, text).unwrap();
    let out = crate::support::robobrain(
        &[
            "report",
            damaged.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ],
        "",
    );
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("damaged.jsonl:") && out.stderr.contains("line"),
        "{}",
        out.stderr
    );
}

/// A frame over the line limit is refused before parsing, a binary frame
/// is named, the connection goes on, and the E-stop sent after them acts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_is_refused_and_the_estop_after_it_arrives() {
    let server = serve("web-frames", &[]);
    let mut ws = connect(&server.addr, "").await;
    let mut seen = Vec::new();
    until(&mut ws, &mut seen, |m| m["type"] == "snapshot").await;
    let huge = format!(r#"{{"cmd":"say","text":"{}"}}"#, "x".repeat(10 << 20));
    let bytes = huge.len();
    let started = std::time::Instant::now();
    ws.send(Message::Text(huge.into())).await.unwrap();
    ws.send(Message::Binary(vec![0xff, 0xfe].into()))
        .await
        .unwrap();
    let sent = std::time::Instant::now();
    ws.send(Message::Text(r#"{"cmd":"estop"}"#.into()))
        .await
        .unwrap();
    let refused = until(&mut ws, &mut seen, |m| m["type"] == "error").await;
    assert_eq!(refused["code"], "line_too_long", "{refused}");
    let why = refused["message"].as_str().unwrap();
    assert!(
        why.contains(&format!("{bytes} bytes")) && why.contains("16384-byte limit"),
        "{why}"
    );
    let binary = until(&mut ws, &mut seen, |m| m["type"] == "error").await;
    assert_eq!(binary["code"], "invalid_utf8", "{binary}");
    until(&mut ws, &mut seen, |m| {
        is_event(m, "mode") && m["event"]["to"] == "SAFE"
    })
    .await;
    eprintln!(
        "E-stop behind a {bytes}-byte frame over the WebSocket: {:.1} ms from its frame to the SAFE event ({:.1} ms from the big frame's first byte)",
        sent.elapsed().as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    assert!(
        !seen.iter().any(|e| e["kind"] == "intent"),
        "the refused frame reached the intent parser"
    );
}
