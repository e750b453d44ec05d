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
        let at = [" at http://", " at https://"]
            .iter()
            .find_map(|p| line.find(p).map(|i| i + p.len()));
        if let Some(at) = at {
            break line[at..].trim_end_matches('/').to_string();
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
    let reason = refused["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("web viewer: ws#")
            && reason.ends_with("may only watch: `approve` was refused"),
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
    // Where each came from: this connection, its peer, its role — on the
    // utterance's events, on the card (`requested_by`) and on the answer.
    let origin = &approvals[0]["requested_by"];
    assert_eq!(origin["door"], "web", "{}", approvals[0]);
    assert_eq!(origin["role"], "operator");
    let detail = origin["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("ws#") && detail.contains(" 127.0.0.1:"),
        "{detail}"
    );
    assert_eq!(
        approvals[0].get("origin"),
        None,
        "asked for by the kernel's loop"
    );
    assert_eq!(&approvals[1]["origin"], origin, "approved by the same page");
    assert_eq!(&approvals[1]["requested_by"], origin);
    let intent = seen.iter().find(|e| e["kind"] == "intent").unwrap();
    assert_eq!(&intent["origin"], origin);
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

/// A raw HTTP/1.1 `GET path` on `addr` naming `host` (none: no `Host`
/// header at all) with these extra header lines; (status, body).
pub(crate) fn get_as(
    addr: &str,
    host: Option<&str>,
    path: &str,
    headers: &[&str],
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // A WebSocket handshake says `Connection: Upgrade`; anything else, close.
    let mut request = format!("GET {path} HTTP/1.1\r\n");
    if !headers.iter().any(|h| h.starts_with("Connection:")) {
        request.push_str("Connection: close\r\n");
    }
    if let Some(host) = host {
        request.push_str("Host: ");
        request.push_str(host);
        request.push_str("\r\n");
    }
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    // The head, then the body its Content-Length says (a 101, and a
    // handshake refused, keep the connection open: no waiting for its end).
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let complete = |raw: &[u8]| {
        let text = String::from_utf8_lossy(raw);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.trim().parse().unwrap());
        head.starts_with("HTTP/1.1 101") || body.len() >= length
    };
    while !complete(&raw) {
        let n = stream.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the server closed mid-answer: {}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "a body this test cannot read: {head}"
    );
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// The headers of a WebSocket handshake.
const UPGRADE: [&str; 4] = [
    "Connection: Upgrade",
    "Upgrade: websocket",
    "Sec-WebSocket-Version: 13",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
];

/// Every route of a server on loopback — the page, its files, the API,
/// `/metrics`, `/healthz`, the WebSocket and paths that do not exist —
/// refuses a request whose `Host` is not this machine (DNS rebinding), and
/// answers localhost, 127.0.0.1 and [::1] with or without a port.
fn only_local_names_are_served(addr: &str, paths: &[&str]) {
    let port = addr.rsplit(':').next().unwrap();
    for path in paths {
        let upgrade: &[&str] = if *path == "/ws" { &UPGRADE } else { &[] };
        for host in [
            "evil.example".to_string(),
            format!("evil.example:{port}"),
            format!("127.0.0.1.nip.io:{port}"),
            format!("localhost.evil.example:{port}"),
            format!("127.0.0.2:{port}"),
        ] {
            let (status, body) = get_as(addr, Some(&host), path, upgrade);
            assert_eq!(status, 403, "{path} as {host}: {body}");
            assert!(
                body.contains(&format!("Host `{host}` is not this machine"))
                    && body.contains("DNS rebinding"),
                "{path} as {host}: {body}"
            );
        }
        let (status, body) = get_as(addr, None, path, upgrade);
        assert_eq!(status, 400, "{path} with no Host: {body}");
        assert!(body.contains("no Host header"), "{body}");
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = get_as(addr, Some(&host), paths[0], &[]);
        assert_eq!(status, 200, "{} as {host}: {body}", paths[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_every_route_answers_only_to_this_machines_names() {
    let server = serve("web-host", &[]);
    only_local_names_are_served(
        &server.addr,
        &[
            "/api/snapshot",
            "/api/map",
            "/metrics",
            "/healthz",
            "/",
            "/index.html",
            "/ws",
            "/no/such/thing",
        ],
    );
    let port = server.addr.rsplit(':').next().unwrap();
    let (status, _) = get_as(
        &server.addr,
        Some(&format!("localhost:{port}")),
        "/ws",
        &UPGRADE,
    );
    assert_eq!(status, 101, "this machine's page gets its WebSocket");
    // A WebSocket client that names another host is refused too.
    let mut request = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Host", "rebound.example".parse().unwrap());
    let refused = tokio_tungstenite::connect_async(request).await.unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");

    // The fleet page's server keeps the same rule (its broker need not be there).
    let dir = temp_dir("web-host-fleet");
    let config = crate::support::quiet_config(&dir);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let broker = format!("mqtt://{}", closed.local_addr().unwrap());
    drop(closed);
    let fleet = serve_with(&config, &["--fleet", &broker], 1.0);
    only_local_names_are_served(&fleet.addr, &["/api/fleet", "/metrics", "/ws", "/"]);

    // Beyond loopback any name is served, and the token decides.
    let wide = serve(
        "web-host-wide",
        &["--listen", "0.0.0.0:0", "--token", "T0K"],
    );
    let port = wide.addr.rsplit(':').next().unwrap();
    let local = format!("127.0.0.1:{port}");
    let robot = format!("robot.example:{port}");
    let (status, body) = get_as(
        &local,
        Some(&robot),
        "/api/snapshot",
        &["Authorization: Bearer T0K"],
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = get_as(&local, Some(&robot), "/api/snapshot", &[]);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer"), "{body}");
}

/// A throw-away self-signed certificate for localhost and 127.0.0.1 in
/// `dir`: (`cert.pem`, `key.pem`). Not a CA (`CA:FALSE`): rustls refuses a
/// CA's certificate as a server's own.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let openssl = robobrain_core::testing::program("openssl", "apt-get install openssl");
    let out = std::process::Command::new(openssl)
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cert, key)
}

/// `serve --tls-cert --tls-key` and `tui --connect wss://… --ca`: the
/// console attaches over TLS with the token in an `Authorization: Bearer`
/// header (never in the URL, never on its screen); a wrong token, an
/// untrusted certificate and plain ws:// are each refused with their
/// reason; the API answers over HTTPS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_attaches_over_wss_with_the_token_in_a_header() {
    use robobrain_tui::console::transport::{ConnectError, ConnectOptions, Remote};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = temp_dir("web-wss");
    let (cert, key) = self_signed(&dir);
    let token = dir.join("token");
    std::fs::write(&token, "wss-s3cret\n").unwrap();
    let config = crate::support::quiet_config(&dir);
    let server = serve_with(
        &config,
        &[
            "--token-file",
            token.to_str().unwrap(),
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        4.0,
    );
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let url = format!("wss://localhost:{port}");
    let trusted = |token: &str| ConnectOptions {
        token: Some(token.into()),
        ca: Some(cert.clone()),
    };

    // In process: the header token admits, a wrong one is refused, the
    // certificate must be trusted, and plain ws:// gets no WebSocket.
    let (remote, greeting) = Remote::connect(&url, &trusted("wss-s3cret")).await.unwrap();
    assert_eq!(
        greeting.hello.role,
        robobrain_core::protocol::Role::Operator
    );
    assert_eq!(remote.url(), url);
    drop(remote);
    let wrong = Remote::connect(&url, &trusted("guess"))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(wrong, ConnectError::Connect { .. }) && wrong.to_string().contains("401"),
        "{wrong}"
    );
    let untrusted = ConnectOptions {
        token: Some("wss-s3cret".into()),
        ca: None,
    };
    let e = Remote::connect(&url, &untrusted).await.err().unwrap();
    let why = format!(
        "{e}: {}",
        std::error::Error::source(&e)
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(
        matches!(e, ConnectError::Tls { .. }) && why.contains("--ca FILE"),
        "{why}"
    );
    assert!(why.to_lowercase().contains("certificate"), "{why}");
    let plain = format!("ws://localhost:{port}");
    assert!(
        Remote::connect(&plain, &trusted("wss-s3cret"))
            .await
            .is_err()
    );

    // The API over HTTPS with the bearer token (what a monitor sends).
    let tls = robobrain_tui::web::tls::client_config(Some(&cert)).unwrap();
    let tcp = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut https = robobrain_tui::web::tls::connector(tls)
        .connect(name, tcp)
        .await
        .unwrap();
    https
        .write_all(
            format!(
                "GET /api/snapshot HTTP/1.1\r\nHost: localhost:{port}\r\nAuthorization: Bearer wss-s3cret\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    let _ = https.read_to_string(&mut answer).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.300}");

    // The binary: the token from ROBOBRAIN_TOKEN and the CA from --ca.
    let args = format!("tui --connect {url} --ca {}", cert.display());
    let command = format!(
        "export ROBOBRAIN_TOKEN=wss-s3cret; {}",
        crate::console::console_then_shell(&config, &args)
    );
    let tmux = crate::console::Tmux::start(&command, 140, 40);
    let screen = tmux.wait_for("the console over wss", 30, |s| s.contains("(operator)"));
    assert!(screen.contains(&url), "{screen}");
    assert!(
        !screen.contains("wss-s3cret"),
        "the token is never shown: {screen}"
    );
    tmux.keys(&["C-c"]);
    let s = tmux.wait_for("the quit question or the exit", 10, |s| {
        s.contains("Quit?") || s.contains("tty=")
    });
    if s.contains("Quit?") {
        tmux.keys(&["y"]);
    }
    let end = tmux.wait_for("the console to end", 10, |s| s.contains("tty="));
    assert!(
        end.contains("exit=0") && end.contains(&format!("detached from {url}")),
        "{end}"
    );
}
