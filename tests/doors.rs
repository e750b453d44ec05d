//! The door matrix (issue 35, "Done when"): the same dangerous requests —
//! the restricted study by name and by coordinates, a path through a
//! restricted room, leaving the apartment, unlocking the front door —
//! through every door robobrain has, each against the real thing: the
//! operator's lines on `headless`' stdin (the console's and the page's
//! command path), the page's WebSocket on `serve`, `robobrain mcp` with the
//! rmcp client, a VDA 5050 master control on mosquitto with passwords and
//! the fleet ACL, Home Assistant's button topics on mosquitto, and a model
//! (`robobrain mock-llm`) whose decision asks for it. Every one waits for
//! an operator's approval — an `approval` event naming where it would go or
//! what it would switch, and the door that asked (`requested_by`), with
//! nothing dispatched before it — or is refused.
//!
//! Two more rows: moving after an E-stop reset (a reset through the
//! operator's lines, the page and VDA 5050's `eStopRelease` releases the
//! latch and nothing moves until an operator's `resume`; Home Assistant
//! offers no reset and no resume), and Home Assistant's Patrol and Dock
//! buttons, which only ask when the config offers them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use robobrain_core::devices::mqtt::broker::Mosquitto;
use robobrain_core::devices::mqtt::discovery::{Button, Discovery};
use robobrain_core::fleet::testkit::{OPERATOR, Observer, fleet_broker};
use robobrain_tui::mcp::EVENTS_URI;
use rumqttc::QoS;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{quiet_config, root, temp_dir};

/// How long a door may take to answer, wall seconds (a limit on waiting,
/// not a timed assertion: the events are checked, not the time).
const PATIENCE: Duration = Duration::from_secs(60);

/// The world whose short way from west to east runs through the restricted vault.
fn through() -> PathBuf {
    root().join("tests/fixtures/worlds/through.toml")
}

/// One dangerous request, and the words the policy's reason must hold.
struct Row {
    /// What it asks, for messages.
    what: &'static str,
    /// The world it is asked in (`None`: the apartment).
    world: Option<PathBuf>,
    /// Substrings of the approval's reason.
    reason: &'static [&'static str],
}

const STUDY: &[&str] = &["restricted zone study"];
const VAULT: &[&str] = &["restricted zone vault", "on its way"];
const OUTSIDE: &[&str] = &["leaves the apartment"];
const UNLOCK: &[&str] = &["unlock", "front_door_lock"];

/// A config in a fresh folder, with `extra` TOML appended.
fn config(name: &str, extra: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(&format!("doors-{name}"));
    let config = quiet_config(&dir);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(extra);
    std::fs::write(&config, text).unwrap();
    (dir, config)
}

/// A `robobrain headless` run: its stdin, and its events as they come.
struct Headless {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Value>,
    seen: Vec<Value>,
}

impl Drop for Headless {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Headless {
    /// `robobrain --config CONFIG [--world WORLD] headless` in real time.
    fn start(dir: &Path, config: &Path, world: Option<&Path>) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_robobrain"));
        cmd.arg("--config").arg(config);
        if let Some(w) = world {
            cmd.arg("--world").arg(w);
        }
        let mut child = cmd
            .args(["headless", "--speed", "10"])
            .current_dir(root())
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .spawn()
            .unwrap();
        let events = crate::support::json_lines(child.stdout.take().unwrap());
        Self {
            stdin: child.stdin.take(),
            child,
            events,
            seen: Vec::new(),
        }
    }

    /// Types one operator line.
    fn line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The first event from now on that satisfies `want`.
    fn until(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) => {
                    self.seen.push(e.clone());
                    if want(&e) {
                        return e;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    panic!("{what}: not seen; the last events:\n{}", tail(&self.seen))
                }
            }
        }
    }

    /// Waits for the approval `row` must ask for, checks it names the door
    /// `origin` that asked and that nothing moved or switched before it,
    /// and refuses it (so the next row starts clean).
    fn waits(&mut self, door: &str, origin: &str, row: &Row) {
        let from = self.seen.len();
        let asked = self.until(&format!("{door}: {}", row.what), is_request);
        approval_names(door, row, &asked);
        asked_from(door, row, origin, &asked);
        nothing_dispatched(door, row, &self.seen[from..]);
        let id = asked["approval_id"].as_str().unwrap();
        self.line(
            &json!({"cmd": "reject", "approval_id": id, "reason": "door matrix"}).to_string(),
        );
        self.until(&format!("{door}: {} rejected", row.what), |e| {
            e["kind"] == "approval" && e["approval_id"] == id && e["status"] == "rejected"
        });
    }
}

fn tail(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .take(15)
        .rev()
        .filter(|e| e["kind"] != "telemetry")
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_request(e: &Value) -> bool {
    e["kind"] == "approval" && e["status"] == "requested"
}

/// The approval's reason names the place or the device.
fn approval_names(door: &str, row: &Row, asked: &Value) {
    let reason = asked["reason"].as_str().unwrap_or_default();
    for needle in row.reason {
        assert!(
            reason.contains(needle),
            "{door}: {}: the approval's reason {reason:?} does not say {needle:?}: {asked}",
            row.what
        );
    }
}

/// The approval names the door the request came through (`requested_by`).
fn asked_from(door: &str, row: &Row, origin: &str, asked: &Value) {
    assert_eq!(
        asked["requested_by"]["door"], origin,
        "{door}: {}: the approval does not name who asked: {asked}",
        row.what
    );
}

/// No goal went to the robot and no device was switched among `events`.
fn nothing_dispatched(door: &str, row: &Row, events: &[Value]) {
    let moved: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["kind"] == "skill"
                && e["status"] == "dispatched"
                && ["navigate_to", "dock", "devices.invoke"]
                    .contains(&e["skill"].as_str().unwrap_or_default())
        })
        .collect();
    assert!(
        moved.is_empty(),
        "{door}: {}: dispatched before any approval: {moved:?}",
        row.what
    );
}

fn rows() -> Vec<(Row, &'static str)> {
    vec![
        (
            Row {
                what: "the study by name",
                world: None,
                reason: STUDY,
            },
            "go to the study",
        ),
        (
            Row {
                what: "the study by coordinates",
                world: None,
                reason: STUDY,
            },
            r#"{"cmd":"call","call_id":"d-xy","skill":"navigate_to","args":{"x":3.0,"y":2.0}}"#,
        ),
        (
            Row {
                what: "out of the apartment",
                world: None,
                reason: OUTSIDE,
            },
            r#"{"cmd":"call","call_id":"d-out","skill":"navigate_to","args":{"x":15.25,"y":7.5}}"#,
        ),
        (
            Row {
                what: "the front door unlocked",
                world: None,
                reason: UNLOCK,
            },
            "unlock the front door",
        ),
        (
            Row {
                what: "east by a path through the vault",
                world: Some(through()),
                reason: VAULT,
            },
            r#"{"cmd":"call","call_id":"d-east","skill":"navigate_to","args":{"zone":"east"}}"#,
        ),
    ]
}

/// The console's and the page's command path: operator lines on
/// `headless`' stdin (`protocol::line`, the same parser `serve` uses).
#[test]
fn headless_operator_lines_wait_for_approval() {
    for world in [None, Some(through())] {
        let (dir, config) = config("headless", "");
        let mut run = Headless::start(&dir, &config, world.as_deref());
        for (row, line) in rows().iter().filter(|(r, _)| r.world == world) {
            run.line(line);
            run.waits("headless", "headless", row);
        }
    }
}

/// The page: the same lines as WebSocket text frames on `serve`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_websocket_waits_for_approval() {
    for world in [None, Some(through())] {
        let (_dir, config) = config("serve", "");
        let server = serve_in(&config, world.as_deref());
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr))
            .await
            .unwrap();
        let mut seen: Vec<Value> = Vec::new();
        for (row, line) in rows().iter().filter(|(r, _)| r.world == world) {
            let from = seen.len();
            ws.send(Message::text(*line)).await.unwrap();
            let asked = ws_until(
                &mut ws,
                &mut seen,
                &format!("page: {}", row.what),
                is_request,
            )
            .await;
            approval_names("page", row, &asked);
            asked_from("page", row, "web", &asked);
            nothing_dispatched("page", row, &seen[from..]);
            let id = asked["approval_id"].as_str().unwrap().to_string();
            ws.send(Message::text(
                json!({"cmd": "reject", "approval_id": id, "reason": "door matrix"}).to_string(),
            ))
            .await
            .unwrap();
            ws_until(&mut ws, &mut seen, "page: rejected", |e| {
                e["kind"] == "approval"
                    && e["approval_id"] == id.as_str()
                    && e["status"] == "rejected"
            })
            .await;
        }
    }
}

/// `robobrain serve` with `config` (and `world`, when given) on a free
/// loopback port.
fn serve_in(config: &Path, world: Option<&Path>) -> crate::web::Server {
    let Some(world) = world else {
        return crate::web::serve_with(config, &[], 10.0);
    };
    let with_world = config.with_file_name("robobrain-world.toml");
    let text = std::fs::read_to_string(config).unwrap();
    std::fs::write(
        &with_world,
        format!("world = {:?}\n{text}", world.display().to_string()),
    )
    .unwrap();
    crate::web::serve_with(&with_world, &[], 10.0)
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The first event on `ws` satisfying `want`; every event seen is kept.
async fn ws_until(
    ws: &mut Ws,
    seen: &mut Vec<Value>,
    what: &str,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let m = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: not seen; last events:\n{}", tail(seen)))
            .expect("the socket closed")
            .unwrap();
        let Message::Text(t) = m else { continue };
        let m: Value = serde_json::from_str(&t).unwrap();
        if m["type"] != "event" {
            continue;
        }
        let e = m["event"].clone();
        seen.push(e.clone());
        if want(&e) {
            return e;
        }
    }
}

/// MCP: `robobrain mcp` over stdio with the rmcp client; a held call comes
/// back `confirmation_required` with the policy's reason, and the run's
/// events show nothing dispatched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tool_calls_wait_for_approval() {
    let calls: [(&str, Value, Row); 5] = [
        (
            "navigate_to",
            json!({"zone": "study"}),
            Row {
                what: "the study by name",
                world: None,
                reason: STUDY,
            },
        ),
        (
            "navigate_to",
            json!({"x": 3.0, "y": 2.0}),
            Row {
                what: "the study by coordinates",
                world: None,
                reason: STUDY,
            },
        ),
        (
            "navigate_to",
            json!({"zone": "outside"}),
            Row {
                what: "out of the apartment",
                world: None,
                reason: OUTSIDE,
            },
        ),
        (
            "devices.invoke",
            json!({"device": "front_door_lock", "action": "unlock"}),
            Row {
                what: "the front door unlocked",
                world: None,
                reason: UNLOCK,
            },
        ),
        (
            "navigate_to",
            json!({"zone": "east"}),
            Row {
                what: "east by a path through the vault",
                world: Some(through()),
                reason: VAULT,
            },
        ),
    ];
    // One server a call: each is judged on its own, from the robot's start.
    for (i, (tool, args, row)) in calls.iter().enumerate() {
        let (dir, config) = config(&format!("mcp-{i}"), "");
        let log = dir.join("run.jsonl");
        let world = row.world.clone();
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_robobrain")).configure(|cmd| {
            cmd.arg("--config").arg(&config);
            if let Some(w) = &world {
                cmd.arg("--world").arg(w);
            }
            cmd.args(["mcp", "--speed", "10", "--log"])
                .arg(&log)
                .current_dir(root())
                .env("NO_COLOR", "1");
        });
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let name = tools
            .iter()
            .map(|t| t.name.to_string())
            .find(|n| n == tool || n.replace("__", ".") == *tool)
            .unwrap_or_else(|| panic!("no MCP tool for {tool}"));
        let Value::Object(args) = args.clone() else {
            unreachable!()
        };
        let held = client
            .call_tool(CallToolRequestParams::new(name).with_arguments(args))
            .await
            .unwrap();
        let v = held.structured_content.clone().unwrap();
        assert_eq!(
            v["status"], "confirmation_required",
            "mcp: {}: {held:?}",
            row.what
        );
        approval_names("mcp", row, &v);
        // The events resource is kept apart from the call's answer: read
        // it until the approval is in (the call saw it first).
        let deadline = Instant::now() + PATIENCE;
        let (events, asked) = loop {
            let text = client
                .read_resource(ReadResourceRequestParams::new(EVENTS_URI))
                .await
                .unwrap();
            let ResourceContents::TextResourceContents { text, .. } = &text.contents[0] else {
                panic!("the events resource is not text")
            };
            let events: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if let Some(asked) = events.iter().find(|e| is_request(e)).cloned() {
                break (events, asked);
            }
            assert!(
                Instant::now() < deadline,
                "mcp: {}: no approval in the events",
                row.what
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        nothing_dispatched("mcp", row, &events);
        asked_from("mcp", row, "mcp", &asked);
        let detail = asked["requested_by"]["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("stdio mcp-1, client "),
            "mcp: {}: the card names the transport, the call and the client: {asked}",
            row.what
        );
        client.cancel().await.unwrap();
    }
}

/// VDA 5050: a master control on mosquitto (passwords, the fleet ACL)
/// sends orders whose node names the study, gives its position, leads out
/// of the apartment or, in the other flat, past the vault; each waits.
/// An instant action robobrain does not take (there is no way to unlock a
/// door over VDA 5050) is refused: FAILED in `state`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vda5050_orders_wait_for_approval_and_other_actions_are_refused() {
    let broker = fleet_broker("doors-vda", &["r1"], |_| String::new());
    let mut master = Observer::start(broker.port, "doors-master", OPERATOR.0, OPERATOR.1).await;
    let header = |id: u64| {
        json!({"headerId": id, "timestamp": "2026-11-28T08:00:00.000Z", "version": "2.1.0",
               "manufacturer": "acme", "serialNumber": "r1"})
    };
    let order = |id: u64, node: Value| {
        let mut m = header(id);
        m.as_object_mut().unwrap().extend(
            json!({"orderId": format!("o{id}"), "orderUpdateId": 0, "nodes": [node], "edges": []})
                .as_object()
                .unwrap()
                .clone(),
        );
        m
    };
    let node = |id: &str, at: Option<(f64, f64, &str)>| {
        let mut n = json!({"nodeId": id, "sequenceId": 0, "released": true, "actions": []});
        if let Some((x, y, map)) = at {
            n["nodePosition"] = json!({"x": x, "y": y, "mapId": map});
        }
        n
    };
    let cases: Vec<(Row, Value)> = vec![
        (
            Row {
                what: "the study by name",
                world: None,
                reason: STUDY,
            },
            order(1, node("study", None)),
        ),
        (
            Row {
                what: "the study by coordinates",
                world: None,
                reason: STUDY,
            },
            order(2, node("n1", Some((3.0, 2.0, "apartment")))),
        ),
        (
            Row {
                what: "out of the apartment",
                world: None,
                reason: OUTSIDE,
            },
            order(3, node("n2", Some((15.25, 7.5, "apartment")))),
        ),
        (
            Row {
                what: "east by a path through the vault",
                world: Some(through()),
                reason: VAULT,
            },
            order(4, node("n3", Some((5.25, 1.25, "through")))),
        ),
    ];
    for world in [None, Some(through())] {
        let (dir, config) = config(
            &format!("vda-{}", world.is_some()),
            &fleet_section(broker.port, &temp_dir("doors-vda-secret")),
        );
        let mut run = Headless::start(&dir, &config, world.as_deref());
        master
            .until("uagv/v2/acme/r1", "connection", |v| {
                v["connectionState"] == "ONLINE"
            })
            .await;
        for (row, order) in cases.iter().filter(|(r, _)| r.world == world) {
            // VDA 5050 §6.6.1: an order starts where the robot stands.
            master.mark();
            let here = master.until("uagv/v2/acme/r1", "state", |_| true).await;
            let order = from_here(order, &here["agvPosition"]);
            master.mark();
            master
                .client
                .publish(
                    "uagv/v2/acme/r1/order",
                    QoS::AtLeastOnce,
                    false,
                    order.to_string(),
                )
                .await
                .unwrap();
            run.waits("vda5050", "vda5050", row);
            // Refused by the operator, the order has failed: the next may come.
            let id = order["orderId"].clone();
            master
                .until("uagv/v2/acme/r1", "state", |v| {
                    v["orderId"] == id
                        && v["errors"]
                            .as_array()
                            .is_some_and(|e| e.iter().any(|e| e["errorType"] == "orderError"))
                })
                .await;
        }
        if world.is_none() {
            let mut m = header(9);
            m["actions"] =
                json!([{"actionType": "unlockDoor", "actionId": "u1", "blockingType": "HARD"}]);
            master.mark();
            instant_actions(&master, &m).await;
            master
                .until("uagv/v2/acme/r1", "state", |v| {
                    v["actionStates"].as_array().is_some_and(|a| {
                        a.iter()
                            .any(|s| s["actionId"] == "u1" && s["actionStatus"] == "FAILED")
                    })
                })
                .await;
        }
        master.mark();
        drop(run);
        // The next run takes over the robot's id: wait until this one is gone.
        master
            .until("uagv/v2/acme/r1", "connection", |v| {
                v["connectionState"] != "ONLINE"
            })
            .await;
    }
}

/// `order` (one node) from where the robot is (`at`, `state.agvPosition`):
/// a first node there, then the order's node.
fn from_here(order: &Value, at: &Value) -> Value {
    let mut order = order.clone();
    let mut node = order["nodes"][0].clone();
    node["sequenceId"] = json!(2);
    order["edges"] = json!([{"edgeId": "e1", "sequenceId": 1, "released": true,
        "startNodeId": "here", "endNodeId": node["nodeId"], "actions": []}]);
    order["nodes"] = json!([{"nodeId": "here", "sequenceId": 0, "released": true, "actions": [],
        "nodePosition": {"x": at["x"], "y": at["y"], "mapId": at["mapId"]}}, node]);
    order
}

/// A master control's instant actions `m` for robot `r1`.
async fn instant_actions(master: &Observer, m: &Value) {
    master
        .client
        .publish(
            "uagv/v2/acme/r1/instantActions",
            QoS::AtLeastOnce,
            false,
            m.to_string(),
        )
        .await
        .unwrap();
}

/// The `[fleet]` section of robot `r1` on the broker at `port`.
fn fleet_section(port: u16, secret_dir: &Path) -> String {
    let password = secret_dir.join("password");
    std::fs::write(
        &password,
        robobrain_core::fleet::testkit::robot_password("r1"),
    )
    .unwrap();
    format!(
        "[fleet]\nbroker = \"mqtt://127.0.0.1:{port}\"\nrobot_id = \"r1\"\nmanufacturer = \"acme\"\n\
         username = \"r1\"\npassword_file = {:?}\npublish_ms = 100\n",
        password.display().to_string()
    )
}

/// A mosquitto, and a `headless` run whose `[home]` is on it with `extra`.
fn home_run(name: &str, extra: &str) -> (Mosquitto, Headless) {
    let broker = Mosquitto::start(&format!("doors-{name}"));
    let (dir, config) = config(
        name,
        &format!("[home]\nmqtt = \"127.0.0.1:{}\"\n{extra}", broker.port),
    );
    let run = Headless::start(&dir, &config, None);
    (broker, run)
}

/// A Home Assistant user's connection to `broker`, as client `id`.
fn home_user(broker: &Mosquitto, id: &str) -> (rumqttc::AsyncClient, rumqttc::EventLoop) {
    let mut options = rumqttc::MqttOptions::new(id, "127.0.0.1", broker.port);
    options.set_keep_alive(Duration::from_secs(5));
    rumqttc::AsyncClient::new(options, 64)
}

/// Home Assistant: its buttons cannot name a place or a lock. A command,
/// a zone or an unlock sent on the button topics (or a made-up one) does
/// nothing, and by default (only the E-stop offered) neither does a
/// `PRESS` of Patrol, Dock or the old Resume: no task, no approval,
/// nothing dispatched — the E-stop pressed after them is the first thing
/// the run does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_assistant_button_topics_take_no_place_and_no_lock() {
    let (broker, mut run) = home_run("ha", "discovery = true\n");
    let discovery = Discovery::new("homeassistant", "robobrain");
    let (client, mut eventloop) = home_user(&broker, "doors-ha-user");
    let (tx, mut configs) = tokio::sync::mpsc::unbounded_channel();
    let poller = tokio::spawn(async move {
        loop {
            match eventloop.poll().await {
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                    let _ = tx.send(p.topic);
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    // Wait until the robot is on the broker (its button configs are there).
    client
        .subscribe(format!("{}/#", "homeassistant"), QoS::AtLeastOnce)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let topic = tokio::time::timeout_at(deadline, configs.recv())
            .await
            .expect("no discovery config from the robot")
            .unwrap();
        if topic.ends_with("/config") && topic.contains("button") {
            break;
        }
    }
    let smuggled = [
        json!({"cmd": "call", "call_id": "ha1", "skill": "navigate_to", "args": {"zone": "study"}}).to_string(),
        json!({"cmd": "call", "call_id": "ha2", "skill": "navigate_to", "args": {"x": 15.25, "y": 7.5}}).to_string(),
        json!({"cmd": "call", "call_id": "ha3", "skill": "devices.invoke",
               "args": {"device": "front_door_lock", "action": "unlock"}}).to_string(),
        "go to the study".to_string(),
        "unlock the front door".to_string(),
    ];
    let base = discovery.command_subscription();
    let base = base.trim_end_matches("/+");
    let mut topics: Vec<String> = Button::ALL
        .iter()
        .map(|b| discovery.command_topic(*b))
        .collect();
    topics.push(format!("{base}/study"));
    for off in ["patrol", "dock", "resume"] {
        client
            .publish(format!("{base}/{off}"), QoS::AtLeastOnce, false, "PRESS")
            .await
            .unwrap();
    }
    for topic in &topics {
        for payload in &smuggled {
            client
                .publish(topic, QoS::AtLeastOnce, false, payload.clone())
                .await
                .unwrap();
        }
    }
    client
        .publish(
            discovery.command_topic(Button::EStop),
            QoS::AtLeastOnce,
            false,
            "PRESS",
        )
        .await
        .unwrap();
    run.until("home assistant: the E-stop", |e| {
        e["kind"] == "mode" && e["to"] == "SAFE"
    });
    let acted: Vec<&Value> = run
        .seen
        .iter()
        .filter(|e| {
            matches!(e["kind"].as_str(), Some("task" | "approval"))
                || (e["kind"] == "skill" && e["status"] == "dispatched")
        })
        .collect();
    assert!(
        acted.is_empty(),
        "home assistant: something was acted on before the E-stop: {acted:?}"
    );
    poller.abort();
}

/// Home Assistant with Patrol and Dock offered (`[home] buttons`): a press
/// only asks. Each waits for an approval that names the door and says why,
/// with nothing dispatched before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_assistant_patrol_and_dock_presses_only_ask() {
    let (broker, mut run) = home_run("ha-ask", "buttons = [\"estop\", \"patrol\", \"dock\"]\n");
    let discovery = Discovery::new("homeassistant", "robobrain");
    let (client, mut eventloop) = home_user(&broker, "doors-ha-ask-user");
    let poller = tokio::spawn(async move { while eventloop.poll().await.is_ok() {} });
    // The run is on the broker once it says the broker took its configs.
    run.until("home assistant: the robot announced", |e| {
        e["kind"] == "log"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("took every config"))
    });
    let only_asks = Row {
        what: "a press",
        world: None,
        reason: &["only asks", "home_assistant"],
    };
    for button in [Button::Patrol, Button::Dock] {
        client
            .publish(
                discovery.command_topic(button),
                QoS::AtLeastOnce,
                false,
                "PRESS",
            )
            .await
            .unwrap();
        run.waits("home assistant", "home_assistant", &only_asks);
        // The refused task is cancelled: the next press starts clean.
        run.line(r#"{"cmd":"stop"}"#);
    }
    poller.abort();
}

/// Moving after an E-stop reset (ISO 13850: a reset is not a start): a
/// patrol under way is stopped, the latch released through the door —
/// the operator's lines, the page, VDA 5050's `eStopRelease` — and
/// nothing moves until an operator's deliberate `resume`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_moves_after_an_estop_reset_until_a_deliberate_start() {
    let moving = |e: &Value| {
        e["kind"] == "skill"
            && e["status"] == "dispatched"
            && matches!(e["skill"].as_str(), Some("navigate_to" | "dock"))
    };
    let is_mode = |to: &'static str| move |e: &Value| e["kind"] == "mode" && e["to"] == to;
    let released = |e: &Value| {
        e["kind"] == "log"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("E-stop reset by the operator"))
    };
    // A stretch of sim time: the telemetry of 30 ticks.
    let ticks = |n: usize| {
        let count = std::cell::Cell::new(0);
        move |e: &Value| {
            if e["kind"] == "telemetry" {
                count.set(count.get() + 1);
            }
            count.get() >= n
        }
    };

    // The operator's lines (the console's and the page's command path).
    let (dir, cfg) = config("reset-headless", "");
    let mut run = Headless::start(&dir, &cfg, None);
    run.line(r#"{"cmd":"start_patrol"}"#);
    run.until("headless: the patrol moves", moving);
    run.line(r#"{"cmd":"estop"}"#);
    run.until("headless: the E-stop", is_mode("SAFE"));
    run.line(r#"{"cmd":"reset_estop"}"#);
    run.until("headless: the reset", released);
    let from = run.seen.len();
    run.until("headless: a while after the reset", ticks(30));
    let moved: Vec<&Value> = run.seen[from..].iter().filter(|e| moving(e)).collect();
    assert!(moved.is_empty(), "headless: moved after a reset: {moved:?}");
    run.line(r#"{"cmd":"resume"}"#);
    run.until("headless: the deliberate start", moving);
    drop(run);

    // The page's WebSocket.
    let (_dir, cfg) = config("reset-serve", "");
    let server = serve_in(&cfg, None);
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr))
        .await
        .unwrap();
    let mut seen: Vec<Value> = Vec::new();
    for (line, what, want) in [
        (r#"{"cmd":"start_patrol"}"#, "page: the patrol moves", 0),
        (r#"{"cmd":"estop"}"#, "page: the E-stop", 1),
        (r#"{"cmd":"reset_estop"}"#, "page: the reset", 2),
    ] {
        ws.send(Message::text(line)).await.unwrap();
        ws_until(&mut ws, &mut seen, what, |e| match want {
            0 => moving(e),
            1 => is_mode("SAFE")(e),
            _ => released(e),
        })
        .await;
    }
    let from = seen.len();
    ws_until(
        &mut ws,
        &mut seen,
        "page: a while after the reset",
        ticks(30),
    )
    .await;
    let moved: Vec<&Value> = seen[from..].iter().filter(|e| moving(e)).collect();
    assert!(moved.is_empty(), "page: moved after a reset: {moved:?}");
    ws.send(Message::text(r#"{"cmd":"resume"}"#)).await.unwrap();
    ws_until(&mut ws, &mut seen, "page: the deliberate start", moving).await;
    drop(ws);
    drop(server);

    // VDA 5050: eStop, then eStopRelease, from a master control.
    let broker = fleet_broker("doors-reset-vda", &["r1"], |_| String::new());
    let mut master = Observer::start(broker.port, "reset-master", OPERATOR.0, OPERATOR.1).await;
    let (dir, cfg) = config(
        "reset-vda",
        &fleet_section(broker.port, &temp_dir("doors-reset-vda-secret")),
    );
    let mut run = Headless::start(&dir, &cfg, None);
    master
        .until("uagv/v2/acme/r1", "connection", |v| {
            v["connectionState"] == "ONLINE"
        })
        .await;
    run.line(r#"{"cmd":"start_patrol"}"#);
    run.until("vda5050: the patrol moves", moving);
    for (n, action) in [(1, "eStop"), (2, "eStopRelease")] {
        let m = json!({"headerId": n, "timestamp": "2026-11-28T08:00:00.000Z", "version": "2.1.0",
                       "manufacturer": "acme", "serialNumber": "r1",
                       "actions": [{"actionType": action, "actionId": format!("x{n}"),
                                    "blockingType": "HARD"}]});
        instant_actions(&master, &m).await;
        let e = if n == 1 {
            run.until("vda5050: the E-stop", is_mode("SAFE"))
        } else {
            run.until("vda5050: the reset", released)
        };
        assert_eq!(e["origin"]["door"], "vda5050", "{e}");
    }
    let from = run.seen.len();
    run.until("vda5050: a while after the reset", ticks(30));
    let moved: Vec<&Value> = run.seen[from..].iter().filter(|e| moving(e)).collect();
    assert!(moved.is_empty(), "vda5050: moved after a reset: {moved:?}");
    run.line(r#"{"cmd":"resume"}"#);
    run.until("vda5050: the deliberate start", moving);
}

/// A model's decision: `robobrain mock-llm` answers the run's decision with
/// an op into the study, out of the apartment, past the vault or unlocking
/// the front door; each waits.
#[test]
fn a_models_decision_waits_for_approval() {
    let ops: [(Value, Row); 4] = [
        (
            json!({"op": "dispatch", "skill": "navigate_to", "args": {"x": 3.0, "y": 2.0}}),
            Row {
                what: "the study by coordinates",
                world: None,
                reason: STUDY,
            },
        ),
        (
            json!({"op": "dispatch", "skill": "navigate_to", "args": {"zone": "outside"}}),
            Row {
                what: "out of the apartment",
                world: None,
                reason: OUTSIDE,
            },
        ),
        (
            // A model sees the skill `devices.invoke` as `devices__invoke`.
            json!({"op": "dispatch", "skill": "devices__invoke",
                   "args": {"device": "front_door_lock", "action": "unlock"}}),
            Row {
                what: "the front door unlocked",
                world: None,
                reason: UNLOCK,
            },
        ),
        (
            json!({"op": "dispatch", "skill": "navigate_to", "args": {"x": 5.25, "y": 1.25}}),
            Row {
                what: "east by a path through the vault",
                world: Some(through()),
                reason: VAULT,
            },
        ),
    ];
    for (i, (op, row)) in ops.iter().enumerate() {
        let (dir, script) = {
            let dir = temp_dir(&format!("doors-model-{i}"));
            let script = dir.join("mock.toml");
            let decision =
                json!({"type": "REPLAN", "reason": "the model goes its own way", "ops": [op]});
            let toml_decision = toml_inline(&decision);
            std::fs::write(&script, format!("[[reply]]\ndecision = {toml_decision}\n")).unwrap();
            (dir, script)
        };
        let mut mock = Command::new(env!("CARGO_BIN_EXE_robobrain"))
            .args(["mock-llm", "--script"])
            .arg(&script)
            .args(["--listen", "127.0.0.1:0"])
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It says where it listens on stdout: `… (OPENAI_BASE_URL=URL); …`.
        let mut said = String::new();
        BufReader::new(mock.stdout.take().unwrap())
            .read_line(&mut said)
            .unwrap();
        let url = said
            .split("OPENAI_BASE_URL=")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap_or_else(|| panic!("mock-llm said {said:?}"))
            .to_string();
        let (_, config) = config(
            &format!("model-{i}"),
            &format!(
                "[llm]\nbase_url = \"{url}\"\napi_key = \"sk-door-matrix\"\ntimeout_s = 5\nrecognize_intents = false\n"
            ),
        );
        let mut run = Headless::start(&dir, &config, row.world.as_deref());
        let place = if row.world.is_some() {
            "west"
        } else {
            "kitchen"
        };
        run.line(&format!(
            r#"{{"cmd":"call","call_id":"m{i}","skill":"navigate_to","args":{{"zone":"{place}"}}}}"#
        ));
        // The model decides for the task the operator's line asked for.
        run.waits("model", "headless", row);
        drop(run);
        let _ = mock.kill();
        let _ = mock.wait();
    }
}

/// `value` as a TOML inline value.
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{k:?} = {}", toml_inline(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_inline).collect::<Vec<_>>().join(", ")
        ),
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}
