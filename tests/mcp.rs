//! `robobrain mcp` driven by the rmcp client: over stdio (the binary as a
//! child process), over streamable HTTP (the binary with `--http`), and in
//! process (the library's server with the test holding the runtime handle).
//! Also raw JSON-RPC that is malformed, unknown tools and arguments that
//! break the schema: errors, and the server stays up.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use robobrain_core::config::Config;
use robobrain_core::protocol::{Command, Door, Origin};
use robobrain_core::runtime::Pace;
use robobrain_core::session::{Run, SessionOptions};
use robobrain_tui::mcp::{EVENTS_URI, McpServer, Options, SNAPSHOT_URI};
use serde_json::{Value, json};

use crate::support::{after_stderr_line, root, temp_dir};

type Client = RunningService<RoleClient, ()>;

fn args(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(map) => map,
        other => panic!("arguments must be an object: {other}"),
    }
}

async fn call(client: &Client, tool: &str, a: Value) -> Result<CallToolResult, ServiceError> {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(a)))
        .await
}

async fn read(client: &Client, uri: &str) -> String {
    let r = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    match &r.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    }
}

fn events(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits until the events resource shows task `task_id` ended; returns the events.
async fn until_task_ends(client: &Client, task_id: &str) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let evs = events(&read(client, EVENTS_URI).await);
        if evs.iter().any(|e| {
            e["kind"] == "task"
                && e["task"]["id"] == task_id
                && ["succeeded", "aborted", "cancelled", "waiting_human"]
                    .contains(&e["task"]["status"].as_str().unwrap_or(""))
        }) {
            return evs;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "task {task_id} did not end: {evs:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn dispatches(evs: &[Value], skill: &str) -> usize {
    evs.iter()
        .filter(|e| e["kind"] == "skill" && e["skill"] == skill && e["status"] == "dispatched")
        .count()
}

/// Lists the tools, reads the status, and checks that a call into a
/// restricted zone waits: returns the approval id and the call's task.
async fn list_read_and_hold(client: &Client, zone: &str) -> (String, String) {
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for n in ["navigate_to", "stop_base", "dock", "speak", "robot_status"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let status = tools.iter().find(|t| t.name == "robot_status").unwrap();
    let hints = status.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    let nav = tools.iter().find(|t| t.name == "navigate_to").unwrap();
    assert_eq!(
        nav.meta.as_ref().unwrap().get("robobrain/risk"),
        Some(&json!("low_write"))
    );

    let read_call = call(client, "robot_status", json!({})).await.unwrap();
    assert_eq!(read_call.is_error, Some(false), "{read_call:?}");
    let out = read_call.structured_content.unwrap();
    assert_eq!(out["status"], "succeeded");
    assert!(
        out["output"]["zones"]
            .as_array()
            .unwrap()
            .contains(&json!(zone))
    );

    let held = call(client, "navigate_to", json!({"zone": zone}))
        .await
        .unwrap();
    let v = held.structured_content.clone().unwrap();
    assert_eq!(v["status"], "confirmation_required", "{held:?}");
    let text = format!("{:?}", held.content);
    assert!(text.contains("confirmation required"), "{text}");
    let snapshot: Value = serde_json::from_str(&read(client, SNAPSHOT_URI).await).unwrap();
    assert_eq!(snapshot["approvals"][0]["approval_id"], v["approval_id"]);
    let evs = events(&read(client, EVENTS_URI).await);
    assert_eq!(dispatches(&evs, "navigate_to"), 0, "it ran before approval");
    (
        v["approval_id"].as_str().unwrap().to_string(),
        v["task_id"].as_str().unwrap().to_string(),
    )
}

/// Unknown tools and bad arguments are JSON-RPC errors; the server answers on.
async fn bad_calls_are_errors(client: &Client) {
    let unknown = call(client, "fly", json!({})).await.unwrap_err();
    assert!(
        unknown.to_string().contains("unknown tool `fly`"),
        "{unknown}"
    );
    let bad = call(client, "navigate_to", json!({"zone": 7}))
        .await
        .unwrap_err();
    assert!(
        bad.to_string()
            .contains("invalid arguments for `navigate_to`"),
        "{bad}"
    );
    let missing = client
        .read_resource(ReadResourceRequestParams::new("robobrain://nothing"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("no resource"), "{missing}");
    assert!(!client.list_all_tools().await.unwrap().is_empty());
}

fn robobrain_mcp(extra: &[&str], log: &std::path::Path) -> tokio::process::Command {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_robobrain")).configure(|cmd| {
        cmd.arg("mcp")
            .args(["--speed", "25", "--log"])
            .arg(log)
            .args(extra)
            .current_dir(root())
            .env("NO_COLOR", "1");
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_lists_reads_holds_for_approval_and_runs_once_approved() {
    let dir = temp_dir("mcp-stdio");
    let fifo = dir.join("operator");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let cmd = robobrain_mcp(
        &["--operator", fifo.to_str().unwrap()],
        &dir.join("run.jsonl"),
    );
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let (approval, task) = list_read_and_hold(&client, "study").await;
    bad_calls_are_errors(&client).await;
    // The operator approves on the side channel (the MCP client cannot).
    let fifo_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(fifo_path)
            .unwrap();
        writeln!(f, r#"{{"cmd":"approve","approval_id":"{approval}"}}"#).unwrap();
    });
    let evs = until_task_ends(&client, &task).await;
    writer.join().unwrap();
    assert_eq!(dispatches(&evs, "navigate_to"), 1, "{evs:#?}");
    assert!(evs.iter().any(|e| e["kind"] == "task"
        && e["task"]["id"] == task.as_str()
        && e["task"]["status"] == "succeeded"));
    let snapshot: Value = serde_json::from_str(&read(&client, SNAPSHOT_URI).await).unwrap();
    assert_eq!(snapshot["robot"]["zone"], "study");
    client.cancel().await.unwrap();
    let log = robobrain_core::eventlog::read(&dir.join("run.jsonl")).unwrap();
    assert!(!log.is_empty(), "the run's event log is empty");
}

/// `robobrain mcp --http 127.0.0.1:0 …` with piped stdin; returns the child and its URL.
fn spawn_http(extra: &[&str], log: &std::path::Path) -> (Child, String) {
    let (child, url, _stderr) = spawn_http_watched(extra, log);
    (child, url)
}

/// [`spawn_http`], with the rest of the server's stderr, line by line.
fn spawn_http_watched(
    extra: &[&str],
    log: &std::path::Path,
) -> (Child, String, std::sync::mpsc::Receiver<String>) {
    spawn_http_on("127.0.0.1:0", extra, log)
}

/// [`spawn_http_watched`] at `addr`.
fn spawn_http_on(
    addr: &str,
    extra: &[&str],
    log: &std::path::Path,
) -> (Child, String, std::sync::mpsc::Receiver<String>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .args(["mcp", "--http", addr, "--speed", "25", "--log"])
        .arg(log)
        .args(extra)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (url, stderr) =
        after_stderr_line(&mut child, "serving ", "the server ended before serving");
    (child, url, stderr)
}

/// A raw HTTP/1.1 POST; returns the status line and the body.
fn post(url: &str, headers: &[(&str, &str)], body: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    request_as(host, host, ("POST", path), headers, body)
}

/// A raw HTTP/1.1 request to `addr` naming `host` as its `Host`; (status
/// line, body).
fn request_as(
    addr: &str,
    host: &str,
    (method, path): (&str, &str),
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.extend([*k, ": ", *v, "\r\n"]);
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).unwrap();
    let status = out.lines().next().unwrap_or("").to_string();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_needs_the_token_holds_for_approval_and_runs_once_approved() {
    let dir = temp_dir("mcp-http");
    let (mut child, url) = spawn_http(&["--token", "s3cret"], &dir.join("run.jsonl"));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let (status, _) = post(&url, &[], init);
    assert!(status.contains("401"), "no token: {status}");
    let (status, _) = post(&url, &[("Authorization", "Bearer wrong")], init);
    assert!(status.contains("401"), "wrong token: {status}");
    let (status, body) = post(&url, &[("Authorization", "Bearer s3cret")], "{not json");
    // rmcp refuses a body that is not JSON-RPC with a 4xx and says why.
    assert!(
        status.split(' ').nth(1).is_some_and(|c| c.starts_with('4'))
            && body.contains("deserialize"),
        "malformed JSON-RPC: {status} {body}"
    );
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","pad":"{}"}}"#,
        "x".repeat(2 << 20)
    );
    let (status, _) = post(&url, &[("Authorization", "Bearer s3cret")], &big);
    assert!(status.contains("413"), "oversized: {status}");

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header("s3cret"),
    );
    let client = ().serve(transport).await.unwrap();
    let (approval, task) = list_read_and_hold(&client, "outside").await;
    bad_calls_are_errors(&client).await;
    // The operator approves on the server's stdin.
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"cmd":"approve","approval_id":"{approval}"}}"#).unwrap();
    stdin.flush().unwrap();
    let evs = until_task_ends(&client, &task).await;
    assert_eq!(dispatches(&evs, "navigate_to"), 1, "{evs:#?}");
    let snapshot: Value = serde_json::from_str(&read(&client, SNAPSHOT_URI).await).unwrap();
    assert_eq!(snapshot["robot"]["zone"], "outside");
    client.cancel().await.unwrap();
    drop(stdin);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// On loopback, a request from a web page of another origin is refused as
/// the web console refuses it (a site open in a browser on this machine
/// cannot call the robot's tools); this machine's pages and programs that
/// send no `Origin` are served.
#[test]
fn http_refuses_requests_from_pages_of_other_origins() {
    let dir = temp_dir("mcp-origin");
    let (mut child, url) = spawn_http(&[], &dir.join("run.jsonl"));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    for foreign in [
        "https://evil.example",
        "http://127.0.0.1.evil.example",
        "null",
    ] {
        let (status, body) = post(&url, &[("Origin", foreign)], init);
        assert!(status.contains("403"), "{foreign}: {status} {body}");
        assert!(body.contains("other origins are refused"), "{body}");
    }
    let local = url
        .strip_suffix("/mcp")
        .unwrap()
        .replace("127.0.0.1", "localhost");
    for ok in [vec![], vec![("Origin", local.as_str())]] {
        let (status, body) = post(&url, &ok, init);
        assert!(status.contains("200"), "{ok:?}: {status} {body}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// On loopback, `mcp --http` answers only requests that name this machine
/// as their `Host` — on `/mcp` and on any other path — so a site whose
/// name was pointed at 127.0.0.1 (DNS rebinding) cannot call the tools.
/// Beyond loopback it answers any name, with the token.
#[test]
fn http_answers_only_to_this_machines_names() {
    let dir = temp_dir("mcp-host");
    let (mut child, url) = spawn_http(&[], &dir.join("run.jsonl"));
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap()
        .to_string();
    let port = addr.rsplit(':').next().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.0.0.1.nip.io:{port}"),
    ] {
        for (method, path) in [("POST", "/mcp"), ("GET", "/mcp"), ("GET", "/other")] {
            let (status, body) = request_as(&addr, &host, (method, path), &[], init);
            assert!(
                status.contains("403"),
                "{method} {path} as {host}: {status} {body}"
            );
            assert!(
                body.contains(&format!("Host `{host}` is not this machine")),
                "{method} {path} as {host}: {body}"
            );
        }
    }
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".into(),
    ] {
        let (status, body) = request_as(&addr, &host, ("POST", "/mcp"), &[], init);
        assert!(status.contains("200"), "{host}: {status} {body}");
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Beyond loopback any name is served, and the bearer token decides.
    let (mut wide, url, _stderr) =
        spawn_http_on("0.0.0.0:0", &["--token", "w1de"], &dir.join("wide.jsonl"));
    let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp");
    let (addr, robot) = (format!("127.0.0.1:{port}"), format!("robot.example:{port}"));
    let bearer = [("Authorization", "Bearer w1de")];
    let (status, body) = request_as(&addr, &robot, ("POST", "/mcp"), &bearer, init);
    assert!(
        status.contains("200"),
        "{robot} with the token: {status} {body}"
    );
    let (status, body) = request_as(&addr, &robot, ("POST", "/mcp"), &[], init);
    assert!(
        status.contains("401"),
        "{robot} without it: {status} {body}"
    );
    wide.kill().unwrap();
    wide.wait().unwrap();
}

/// Two calls that both need approval keep two pending approvals (the
/// second used to set the first's task aside and withdraw its approval);
/// no tool answers an approval; the operator approves both and both run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gated_calls_keep_both_approvals_and_no_tool_can_answer_them() {
    let dir = temp_dir("mcp-two");
    let (mut child, url) = spawn_http(&[], &dir.join("run.jsonl"));
    let transport = StreamableHttpClientTransport::from_uri(url.clone());
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    // (`dialog.request_confirmation` asks a person a question; it answers nothing.)
    for t in &tools {
        let action = t.name.rsplit('.').next().unwrap_or_default();
        for verb in ["approve", "approval", "reject", "edit"] {
            assert!(
                !action.contains(verb),
                "a tool can answer approvals: {}",
                t.name
            );
        }
    }
    let mut held = Vec::new();
    for zone in ["study", "outside"] {
        let r = call(&client, "navigate_to", json!({"zone": zone}))
            .await
            .unwrap();
        let v = r.structured_content.unwrap();
        assert_eq!(v["status"], "confirmation_required", "{zone}: {v}");
        held.push((
            v["approval_id"].as_str().unwrap().to_string(),
            v["task_id"].as_str().unwrap().to_string(),
        ));
    }
    for verb in ["approve", "approval.approve"] {
        let e = call(&client, verb, json!({"approval_id": held[0].0}))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("unknown tool"), "{e}");
    }
    // Give the kernel time to arbitrate between the two tasks.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let snapshot: Value = serde_json::from_str(&read(&client, SNAPSHOT_URI).await).unwrap();
    let pending: Vec<&str> = snapshot["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["approval_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        pending,
        [held[0].0.as_str(), held[1].0.as_str()],
        "{snapshot:#}"
    );
    let evs = events(&read(&client, EVENTS_URI).await);
    assert!(
        !evs.iter()
            .any(|e| e["kind"] == "approval" && e["status"] != "requested"),
        "an approval was answered or withdrawn: {evs:#?}"
    );
    assert_eq!(dispatches(&evs, "navigate_to"), 0, "it ran before approval");

    // The operator approves the first, then the second: both run, once each.
    let mut stdin = child.stdin.take().unwrap();
    for (approval, _) in &held {
        writeln!(stdin, r#"{{"cmd":"approve","approval_id":"{approval}"}}"#).unwrap();
    }
    stdin.flush().unwrap();
    for (_, task) in &held {
        until_task_ends(&client, task).await;
    }
    client.cancel().await.unwrap();
    drop(stdin);
    child.kill().unwrap();
    child.wait().unwrap();
    // The whole run, from its log (the events resource keeps the last 500).
    let evs: Vec<Value> = robobrain_core::eventlog::read(&dir.join("run.jsonl"))
        .unwrap()
        .iter()
        .map(robobrain_core::protocol::Event::to_json)
        .collect();
    for (_, task) in &held {
        assert!(
            evs.iter().any(|e| e["kind"] == "task"
                && e["task"]["id"] == task.as_str()
                && e["task"]["status"] == "succeeded"),
            "{task} did not succeed: {evs:#?}"
        );
    }
    assert_eq!(dispatches(&evs, "navigate_to"), 2, "{evs:#?}");
    let requested = evs
        .iter()
        .filter(|e| e["kind"] == "approval" && e["status"] == "requested")
        .count();
    assert_eq!(requested, 2, "an approval was asked for again");
}

#[test]
fn a_wide_bind_without_a_token_is_refused() {
    let out = crate::support::robobrain(&["mcp", "--http", "0.0.0.0:0"], "");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("needs --token"), "{}", out.stderr);
}

#[test]
fn malformed_json_rpc_over_stdio_gets_an_error_and_the_server_answers_on() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .args(["mcp", "--log"])
        .arg(temp_dir("mcp-raw").join("run.jsonl"))
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let init: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "robobrain");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // A line that is not JSON is dropped (rmcp logs it; there is no id to answer).
    send("{this is not json");
    send(r#"{"jsonrpc":"2.0","id":9,"method":42}"#);
    let err: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(err["error"]["code"], -32600, "{err}");
    send(r#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#);
    let err: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        (err["id"].clone(), err["error"]["code"].clone()),
        (json!(4), json!(-32601))
    );
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fly","arguments":{}}}"#,
    );
    let unknown: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(unknown["id"], 2);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    let list: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(list["id"], 3);
    assert!(
        list["result"]["tools"].as_array().unwrap().len() >= 5,
        "{list}"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_a_call_runs_once_after_approval_through_the_runtime_handle() {
    let config = Config {
        thread_id: Some("mcp-inproc".into()),
        runs_dir: temp_dir("mcp-inproc"),
        ..Config::default()
    };
    let run = Run::assemble(
        &config,
        SessionOptions {
            pace: Pace::RealTime { speed: 25.0 },
            keep_recent: robobrain_tui::mcp::RECENT_EVENTS,
            ..SessionOptions::new("mcp")
        },
    )
    .await
    .unwrap();
    let server = Box::pin(McpServer::start(run, Options::default()))
        .await
        .unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let serving = server.clone();
    tokio::spawn(async move {
        let running = serving.serve(theirs).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(ours).await.unwrap();
    let (approval, task) = list_read_and_hold(&client, "study").await;
    // The card says the MCP client asked, over which transport, in which call.
    let card = server.runtime().snapshot().approvals;
    let card = card.iter().find(|a| a.approval_id == approval).unwrap();
    let asked = card.requested_by.as_ref().expect("who asked");
    assert_eq!(asked.door, Door::Mcp, "{asked:?}");
    assert!(asked.detail.starts_with("stdio mcp-"), "{asked:?}");
    let mut events = server.runtime().subscribe();
    server
        .operator(
            Command::Approve {
                approval_id: approval,
            },
            Origin::headless(),
        )
        .await
        .unwrap();
    let evs = until_task_ends(&client, &task).await;
    assert_eq!(dispatches(&evs, "navigate_to"), 1);
    // The answer is the operator's, on the operator's lines.
    let approved = loop {
        match events.recv().await {
            Ok(e) if e.kind.name() == "approval" => break e,
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(approved.origin, Some(Origin::headless()), "{approved:?}");
    // A second call that needs no approval completes within the call itself.
    let spoken = call(&client, "speak", json!({"text": "hello from MCP"}))
        .await
        .unwrap();
    assert_eq!(
        spoken.structured_content.unwrap()["output"]["spoken"],
        "hello from MCP"
    );
    client.cancel().await.unwrap();
}

/// The official Python MCP SDK (PyPI `mcp`, installed by `./x setup`; the
/// interpreter is `$ROBOBRAIN_PYTHON`, else `python3`) lists and calls our tools.
#[test]
fn the_python_mcp_sdk_lists_and_calls_our_tools() {
    let python = std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&python)
        .arg(root().join("tests/fixtures/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_robobrain"))
        .arg(temp_dir("mcp-python").join("run.jsonl"))
        .current_dir(root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{python} tests/fixtures/mcp_client.py failed (is PyPI `mcp` installed? `./x setup`):\n{stderr}"
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        got["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("navigate_to")),
        "{got}"
    );
    assert!(
        got["read_only"]
            .as_array()
            .unwrap()
            .contains(&json!("robot_status")),
        "{got}"
    );
    assert!(
        !got["read_only"]
            .as_array()
            .unwrap()
            .contains(&json!("navigate_to")),
        "{got}"
    );
    assert_eq!(got["status"]["status"], "succeeded");
    assert_eq!(got["status"]["output"]["zone"], "living_room");
    assert_eq!(got["held"]["status"], "confirmation_required");
    assert_eq!(got["held"]["approval_id"], "a1");
    assert_eq!(got["held_is_error"], false);
}

/// The pids of `pid`'s children (every thread's) whose command line has
/// `needle` (the server runs other children too: a voice for its speech).
fn children(pid: u32, needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let path = task.unwrap().path().join("children");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        out.extend(text.split_whitespace().map(|p| p.parse::<u32>().unwrap()));
    }
    out.retain(|child| {
        std::fs::read(format!("/proc/{child}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
    });
    out
}

/// `robobrain mcp` run with `config` (TOML) in a fresh folder `name`: the
/// client, the server's pid, and what it writes on stderr (as it comes).
async fn with_services(
    name: &str,
    config: &str,
) -> (Client, u32, std::sync::Arc<std::sync::Mutex<String>>) {
    let dir = temp_dir(name);
    let file = dir.join("robobrain.toml");
    std::fs::write(&file, config).unwrap();
    let cmd = robobrain_mcp(
        &["--config", file.to_str().unwrap()],
        &dir.join("outer.jsonl"),
    );
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = log.clone();
    let mut stderr = stderr.unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = tokio::io::AsyncReadExt::read(&mut stderr, &mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (().serve(transport).await.unwrap(), pid, log)
}

/// Kills the one service `server` runs, then calls `tool` until it
/// succeeds again; checks stderr said the service stopped and restarted.
async fn kill_and_see_it_restart(
    client: &Client,
    (server, needle): (u32, &str),
    log: &std::sync::Mutex<String>,
    service: &str,
    tool: &str,
    args: &Value,
) {
    let before = children(server, needle);
    assert_eq!(before.len(), 1, "{before:?}");
    let killed = std::process::Command::new("kill")
        .args(["-9", &before[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    loop {
        let r = call(client, tool, args.clone()).await.unwrap();
        if r.structured_content.as_ref().unwrap()["status"] == "succeeded" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never restarted: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let text = log.lock().unwrap().clone();
    assert!(
        text.contains(&format!(
            "MCP service `{service}` stopped; its skills are unavailable"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("MCP service `{service}` restarted")),
        "{text}"
    );
    let after = children(server, needle);
    assert!(after.len() == 1 && after[0] != before[0], "{after:?}");
}

/// `robobrain mcp` uses another `robobrain mcp` as a configured MCP service:
/// its tools are skills `mcp.inner.*`, callable through the outer kernel; a
/// service that cannot start is named and left out; the inner one, killed,
/// is marked unavailable and restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_service_becomes_skills_and_is_restarted_when_it_dies() {
    let config = inner_and_ghost("mcp-services-inner");
    let (client, outer, log) = with_services("mcp-services", &config).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for n in [
        "mcp.inner.speak",
        "mcp.inner.robot_status",
        "mcp.inner.navigate_to",
    ] {
        assert!(names.contains(&n), "{names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("mcp.ghost.")),
        "{names:?}"
    );
    let status = tools
        .iter()
        .find(|t| t.name == "mcp.inner.robot_status")
        .unwrap();
    assert_eq!(
        status.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert!(
        log.lock()
            .unwrap()
            .contains("MCP service `ghost` cannot start"),
        "{}",
        log.lock().unwrap()
    );

    let relayed = call(&client, "mcp.inner.speak", json!({"text": "relay"}))
        .await
        .unwrap();
    let v = relayed.structured_content.unwrap();
    assert_eq!(v["status"], "succeeded", "{v}");
    assert_eq!(v["output"]["output"]["spoken"], "relay", "{v}");

    let again = json!({"text": "again"});
    let inner = (outer, "inner.jsonl");
    kill_and_see_it_restart(&client, inner, &log, "inner", "mcp.inner.speak", &again).await;
    client.cancel().await.unwrap();
}

/// A third-party MCP server, the reference `mcp-server-time` from PyPI
/// (installed by `./x setup` beside the Python SDK), as a skill source:
/// its tools are skills, a call goes through the kernel, and killed
/// mid-run it is restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pypi_reference_server_is_a_skill_source_and_comes_back_after_a_kill() {
    let python = std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| "python3".into());
    let config = format!(
        r#"
[[mcp.services]]
name = "time"
command = "{python}"
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
capabilities = ["clock"]
"#
    );
    let (client, server, log) = with_services("mcp-time", &config).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        names.contains(&"mcp.time.get_current_time".to_string()),
        "{names:?} (is PyPI `mcp-server-time` installed? `./x setup`)\n{}",
        log.lock().unwrap()
    );
    let args = json!({"timezone": "Europe/Berlin"});
    let r = call(&client, "mcp.time.get_current_time", args.clone())
        .await
        .unwrap();
    let v = r.structured_content.unwrap();
    assert_eq!(v["status"], "succeeded", "{v}");
    assert_eq!(v["output"]["timezone"], "Europe/Berlin", "{v}");
    let bad = call(&client, "mcp.time.get_current_time", json!({}))
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("invalid arguments"), "{bad}");
    kill_and_see_it_restart(
        &client,
        (server, "mcp_server_time"),
        &log,
        "time",
        "mcp.time.get_current_time",
        &args,
    )
    .await;
    client.cancel().await.unwrap();
}

/// Two services: `inner`, another `robobrain mcp` (its log in a temp folder
/// named `dir`), and `ghost`, which cannot start.
fn inner_and_ghost(dir: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_robobrain");
    let log = temp_dir(dir).join("inner.jsonl");
    format!(
        r#"
[[mcp.services]]
name = "inner"
command = "{bin}"
args = ["mcp", "--speed", "25", "--log", "{}"]
capabilities = ["robot"]

[[mcp.services]]
name = "ghost"
command = "/nonexistent/ghost-mcp"
"#,
        log.display()
    )
}

/// Runs `robobrain headless` with `services` (TOML `[[mcp.services]]`
/// entries) configured, calls `skill` once, and returns the events.
fn headless_call(name: &str, services: &str, skill: &str) -> Vec<Value> {
    let call = json!({"cmd": "call", "call_id": "c1", "skill": skill, "args": {}});
    headless_with(&temp_dir(name), services, &[], &format!("{call}\n")).0
}

/// Runs `robobrain headless --speed 20` in `dir` with `config` (TOML) and
/// `extra` flags, `stdin` as its input; the events and stdout.
fn headless_with(dir: &Path, config: &str, extra: &[&str], stdin: &str) -> (Vec<Value>, String) {
    let file = dir.join("robobrain.toml");
    std::fs::write(&file, format!("runs_dir = \"{}\"\n{config}", dir.display())).unwrap();
    let mut args = vec![
        "--config",
        file.to_str().unwrap(),
        "headless",
        "--speed",
        "20",
    ];
    args.extend_from_slice(extra);
    let out = crate::support::robobrain(&args, stdin);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    (events(&out.stdout), out.stdout)
}

fn logged(evs: &[Value], level: &str, text: &str) -> bool {
    evs.iter().any(|e| {
        e["kind"] == "log"
            && e["level"] == level
            && e["message"].as_str().is_some_and(|m| m.contains(text))
    })
}

fn succeeded(evs: &[Value], skill: &str) -> bool {
    evs.iter()
        .any(|e| e["kind"] == "skill" && e["skill"] == skill && e["status"] == "succeeded")
}

/// The configured services' tools are skills in `robobrain headless` too
/// (and the console, which opens its run the same way): a call to one goes
/// through the kernel and succeeds; a service that cannot start is a warning.
#[test]
fn headless_runs_the_configured_services_tools_as_skills() {
    let services = inner_and_ghost("mcp-headless-inner");
    let evs = headless_call("mcp-headless", &services, "mcp.inner.robot_status");
    assert!(logged(&evs, "info", "MCP service `inner`:"), "{evs:?}");
    assert!(logged(&evs, "warn", "`ghost` cannot start"), "{evs:?}");
    assert!(succeeded(&evs, "mcp.inner.robot_status"), "{evs:?}");
}

/// A service by URL: another robobrain serving MCP over HTTP with a token.
#[test]
fn a_service_by_url_with_a_token_becomes_skills() {
    let dir = temp_dir("mcp-url");
    // The token from a file on both sides: never on a command line.
    let token = dir.join("token");
    std::fs::write(&token, "t0k\n").unwrap();
    let (mut server, url) = spawn_http(
        &["--token-file", token.to_str().unwrap()],
        &dir.join("server.jsonl"),
    );
    let services = format!(
        "[[mcp.services]]\nname = \"web\"\nurl = \"{url}\"\ntoken_file = {token:?}\n\n[[mcp.services]]\nname = \"locked\"\nurl = \"{url}\"\n"
    );
    let evs = headless_call("mcp-url-headless", &services, "mcp.web.robot_status");
    let _ = server.kill();
    let _ = server.wait();
    assert!(logged(&evs, "info", "MCP service `web`:"), "{evs:?}");
    assert!(
        logged(&evs, "warn", "`locked` cannot start"),
        "without the token: {evs:?}"
    );
    assert!(succeeded(&evs, "mcp.web.robot_status"), "{evs:?}");
}

/// The operator's stdin with `--http`: a line that is not UTF-8 is named
/// and the E-stop after it arrives; SIGTERM ends the server while that
/// stdin is still open.
#[test]
fn http_operator_stdin_survives_a_bad_line_and_sigterm_ends_the_server() {
    let dir = temp_dir("mcp-operator");
    let log = dir.join("run.jsonl");
    let (mut child, _url, stderr) = spawn_http_watched(&[], &log);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"\xff\xfe approve\n{\"cmd\":\"estop\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let bad = loop {
        let line = stderr
            .recv_timeout(Duration::from_secs(10))
            .expect("no error line for the bad line");
        if line.contains("invalid_utf8") {
            break line;
        }
    };
    let bad: Value = serde_json::from_str(&bad).unwrap();
    assert_eq!(bad["line"], 1, "{bad}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains(r#""kind":"mode","from":"IDLE","to":"SAFE""#)
    {
        assert!(
            Instant::now() < deadline,
            "the E-stop after the bad line was lost"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SIGTERM with the operator's stdin still open.
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("robobrain mcp --http ignored SIGTERM while its stdin was open");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    drop(stdin);
}

/// A model sees an MCP service's tools under names OpenAI-style endpoints
/// accept (`mcp__time__get_current_time`; mock-llm refuses a request with
/// any other name, as OpenAI does), and its answer is mapped back to the
/// skill's own name (`mcp.time.get_current_time`).
#[test]
fn a_model_sees_mcp_tools_under_names_it_accepts_and_answers_with_them() {
    use robobrain_core::skills::model_name::is_valid;
    let dir = temp_dir("mcp-model-names");
    let model = crate::support::mock_model(
        &dir,
        "[[reply]]\ntool_calls = [{ name = \"mcp__time__get_current_time\", arguments = { timezone = \"UTC\" } }]\n",
    );
    let config = format!(
        "[llm]\nbase_url = {:?}\napi_key = \"model-names-key\"\n{}",
        model.base_url(),
        crate::support::time_service()
    );
    let say = ["--say", "what time is it in Berlin, roughly?"];
    let (evs, stdout) = headless_with(&dir, &config, &say, "");
    let received = model.received();
    let asked = received
        .iter()
        .find(|r| r.body["tools"][0]["function"]["name"] != "decide")
        .unwrap_or_else(|| panic!("no intent request: {stdout}"));
    let names: Vec<&str> = asked.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().all(|n| is_valid(n)), "{names:?}");
    for name in [
        "mcp__time__get_current_time",
        "devices__list",
        "navigate_to",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    // The answer was mapped back: the kernel judged the skill by its own name.
    let why = "`mcp.time.get_current_time` is not something an utterance may start";
    assert!(logged(&evs, "warn", why), "{stdout}");
}

/// The libraries' own diagnostics are shown, not dropped: with
/// `RUST_LOG=rmcp=info`, rmcp's `tracing` lines about the configured service
/// reach `headless`'s stderr; with neither `RUST_LOG` nor `-v` they do not.
#[test]
fn rust_log_shows_the_mcp_librarys_tracing_on_stderr() {
    let dir = temp_dir("mcp-rust-log");
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            "runs_dir = \"{}\"\n{}",
            dir.display(),
            crate::support::time_service()
        ),
    )
    .unwrap();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "headless",
        "--fast",
        "--duration",
        "1",
    ];
    let out = crate::support::robobrain_env(&args, &[("RUST_LOG", "rmcp=info")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("rmcp::service") && out.stderr.contains("mcp-time"),
        "{}",
        out.stderr
    );
    let quiet = crate::support::robobrain(&args, "");
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("rmcp::"), "{}", quiet.stderr);
}
