//! A robot's run on a real mosquitto with passwords and the fleet ACL:
//! VDA 5050 and the own protocol, every VDA 5050 message checked against
//! the official schemas, an order through the kernel, the E-stop, and a
//! robot that tries another robot's topics.

use rumqttc::QoS;
use serde_json::{Value, json};

use crate::config::Config;
use crate::fleet::testkit::{OPERATOR, Observer, Schemas, fleet_broker, robot_password};
use crate::fleet::vda5050::ConnectionState;
use crate::fleet::*;
use crate::protocol::Command;
use crate::runtime::Pace;
use crate::session::{Session, SessionOptions};

/// A quiet config for robot `id` on the broker at `port`, its password in a file.
fn robot_config(name: &str, id: &str, port: u16) -> Config {
    let dir = std::env::temp_dir().join(format!("rb-fleet-{name}-{id}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("password");
    std::fs::write(&secret, robot_password(id)).unwrap();
    let mut config = Config {
        runs_dir: dir,
        ..Config::default()
    };
    config.memory.enabled = false;
    config.speech.voice = crate::voice::VoiceChoice::Text;
    config.fleet.broker = Some(format!("mqtt://127.0.0.1:{port}"));
    config.fleet.robot_id = id.into();
    config.fleet.manufacturer = "acme".into();
    config.fleet.username = Some(id.into());
    config.fleet.password_file = Some(secret);
    config.fleet.publish_ms = 100;
    config
}

async fn robot(name: &str, id: &str, port: u16) -> Session {
    let options = SessionOptions {
        pace: Pace::RealTime { speed: 8.0 },
        ..SessionOptions::new("fleet-test")
    };
    Session::open(&robot_config(name, id, port), options)
        .await
        .unwrap()
}

fn header(id: u64, serial: &str) -> Value {
    json!({"headerId": id, "timestamp": "2026-11-27T08:00:00.000Z", "version": "2.1.0",
           "manufacturer": "acme", "serialNumber": serial})
}

fn message(header: Value, body: &Value) -> Value {
    let mut v = header;
    v.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    v
}

/// Sends a VDA 5050 message as master control, checked against its schema first.
async fn master(observer: &mut Observer, schemas: &Schemas, topic: &str, leaf: &str, msg: &Value) {
    schemas.check(leaf, msg);
    observer.mark();
    observer
        .client
        .publish(
            topic,
            QoS::AtLeastOnce,
            false,
            serde_json::to_vec(msg).unwrap(),
        )
        .await
        .unwrap();
}

fn instant(id: u64, action_type: &str, action_id: &str) -> Value {
    message(
        header(id, "r1"),
        &json!({"actions": [{"actionType": action_type, "actionId": action_id, "blockingType": "HARD"}]}),
    )
}

fn order(id: &str, nodes: &[&str]) -> Value {
    let nodes: Vec<Value> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"nodeId": n, "sequenceId": i * 2, "released": true, "actions": []}))
        .collect();
    let edges: Vec<Value> = (1..nodes.len())
        .map(|i| {
            json!({"edgeId": format!("e{i}"), "sequenceId": i * 2 - 1, "released": true,
                   "startNodeId": nodes[i - 1]["nodeId"], "endNodeId": nodes[i]["nodeId"], "actions": []})
        })
        .collect();
    message(
        header(1, "r1"),
        &json!({"orderId": id, "orderUpdateId": 0, "nodes": nodes, "edges": edges}),
    )
}

/// Order `id` from where `state` says the robot is (a first node there,
/// VDA 5050 §6.6.1) through `nodes`.
fn from(state: &Value, id: &str, nodes: &[&str]) -> Value {
    let mut o = order(id, &[&["here"], nodes].concat());
    let at = &state["agvPosition"];
    o["nodes"][0]["nodePosition"] = json!({"x": at["x"], "y": at["y"], "mapId": at["mapId"]});
    o
}

const VDA: &str = "uagv/v2/acme/r1";

/// Sends r1 one instant action as master control.
async fn act(op: &mut Observer, schemas: &Schemas, header_id: u64, action: &str, action_id: &str) {
    let message = instant(header_id, action, action_id);
    let topic = format!("{VDA}/instantActions");
    master(op, schemas, &topic, "instantActions", &message).await;
}

/// Sends r1 an own-protocol command as the operator and waits until it is accepted.
async fn command(op: &mut Observer, id: &str, command: Value) {
    op.mark();
    op.client
        .publish(
            "robobrain/r1/command",
            QoS::AtLeastOnce,
            false,
            serde_json::to_vec(&json!({"id": id, "command": command})).unwrap(),
        )
        .await
        .unwrap();
    op.until("robobrain/r1", "reply", |v| {
        v["id"] == id && v["status"] == "accepted"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robot_speaks_vda5050_and_its_own_protocol_on_a_broker_with_passwords_and_acls() {
    let broker = fleet_broker("vda", &["r1", "r2"], |_| String::new());
    let schemas = Schemas::load();
    let mut op = Observer::start(broker.port, "op-vda", OPERATOR.0, OPERATOR.1).await;
    let session = robot("vda", "r1", broker.port).await;

    // Connected: ONLINE (retained), the hello frame, the snapshot, state and visualization.
    let hello = op.until("robobrain/r1", "hello", |_| true).await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["world"]["name"], "apartment");
    op.until(VDA, "connection", |v| v["connectionState"] == "ONLINE")
        .await;
    op.until("robobrain/r1", "snapshot", |v| v["world"] == "apartment")
        .await;
    let state = op.until(VDA, "state", |_| true).await;
    assert_eq!(state["agvPosition"]["mapId"], "apartment");
    assert_eq!(
        state["information"][0]["infoReferences"][0]["referenceKey"],
        "mode"
    );
    assert_eq!(state["loads"], json!([]));
    op.until(VDA, "visualization", |_| true).await;

    // The factsheet on request.
    act(&mut op, &schemas, 1, "factsheetRequest", "f1").await;
    let sheet = op.until(VDA, "factsheet", |_| true).await;
    assert_eq!(sheet["typeSpecification"]["agvKinematic"], "DIFF");

    // An order: one task through the kernel, reported node by node until done.
    master(
        &mut op,
        &schemas,
        &format!("{VDA}/order"),
        "order",
        &order("o1", &["living_room", "hallway", "kitchen"]),
    )
    .await;
    op.until(VDA, "state", |v| {
        v["orderId"] == "o1" && v["driving"] == true
    })
    .await;
    op.until("robobrain/r1", "events", |v| {
        v["event"]["kind"] == "task" && v["event"]["reason"] == "chain vda-o1-0"
    })
    .await;
    let done = op
        .until(VDA, "state", |v| {
            v["orderId"] == "o1" && v["lastNodeId"] == "kitchen"
        })
        .await;
    assert_eq!(done["nodeStates"], json!([]));
    assert_eq!(done["errors"], json!([]));

    // Another robot's order on r1's topic never reaches r1: refused as not addressed.
    master(
        &mut op,
        &schemas,
        &format!("{VDA}/order"),
        "order",
        &message(
            header(2, "r9"),
            &json!({
        "orderId": "o9", "orderUpdateId": 0, "nodes": [], "edges": []}),
        ),
    )
    .await;
    let state = op
        .until(VDA, "state", |v| {
            v["errors"].as_array().is_some_and(|e| !e.is_empty())
        })
        .await;
    assert_eq!(state["errors"][0]["errorType"], "validationError");
    assert_eq!(state["orderId"], "o1");

    // A task under way when the E-stop comes.
    command(
        &mut op,
        "op-go-1",
        json!({"cmd": "say", "text": "go to the bedroom"}),
    )
    .await;
    op.until("robobrain/r1", "snapshot", |v| {
        v["tasks"][0]["status"] == "running"
            && v["running"].as_array().is_some_and(|r| !r.is_empty())
    })
    .await;

    // The E-stop as an instant action: latched, SERVICE mode, REMOTE e-stop.
    act(&mut op, &schemas, 3, "eStop", "s1").await;
    let stopped = op
        .until(VDA, "state", |v| v["safetyState"]["eStop"] == "REMOTE")
        .await;
    assert_eq!(stopped["operatingMode"], "SERVICE");
    op.until("robobrain/r1", "snapshot", |v| v["estop"] == true)
        .await;
    // The same eStop again — the same actionId — is an E-stop again, not a
    // duplicate: the kernel sends a second stop.
    act(&mut op, &schemas, 4, "eStop", "s1").await;
    op.until("robobrain/r1", "events", |v| {
        v["event"]["kind"] == "skill"
            && v["event"]["skill"] == "stop_base"
            && v["event"]["goal_id"]
                .as_str()
                .is_some_and(|g| g.contains("/estop2."))
    })
    .await;

    // eStopRelease releases the latch and never restarts the task the
    // E-stop paused.
    act(&mut op, &schemas, 5, "eStopRelease", "s2").await;
    let released = op
        .until(VDA, "state", |v| v["safetyState"]["eStop"] == "NONE")
        .await;
    assert_eq!(released["driving"], false, "{released:#}");
    assert_eq!(released["operatingMode"], "AUTOMATIC", "{released:#}");
    op.until("robobrain/r1", "snapshot", |v| v["estop"] == false)
        .await;
    for _ in 0..5 {
        op.mark();
        let after = op.until("robobrain/r1", "snapshot", |_| true).await;
        assert_eq!(after["tasks"][0]["status"], "paused", "{after:#}");
        assert_eq!(after["running"], json!([]), "{after:#}");
    }
    // The operator, deliberately: the paused task is stopped.
    command(&mut op, "op-stop-1", json!({"cmd": "stop"})).await;

    // An order into the restricted study waits for an operator's approval
    // like any task, and an operator who refuses it fails the order.
    op.mark();
    let here = op.until(VDA, "state", |_| true).await;
    master(
        &mut op,
        &schemas,
        &format!("{VDA}/order"),
        "order",
        &from(&here, "o2", &["study"]),
    )
    .await;
    let waiting = op
        .until("robobrain/r1", "snapshot", |v| {
            v["approvals"].as_array().is_some_and(|a| !a.is_empty())
        })
        .await;
    let approval_id = waiting["approvals"][0]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let reject = Envelope {
        id: "op-reject-1".into(),
        command: Command::Reject {
            approval_id,
            reason: "not the study".into(),
        },
    };
    op.client
        .publish(
            "robobrain/r1/command",
            QoS::AtLeastOnce,
            false,
            serde_json::to_vec(&reject).unwrap(),
        )
        .await
        .unwrap();
    op.until("robobrain/r1", "reply", |v| {
        v["id"] == "op-reject-1" && v["status"] == "accepted"
    })
    .await;
    let failed = op
        .until(VDA, "state", |v| {
            v["orderId"] == "o2"
                && v["errors"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|e| e["errorType"] == "orderError"))
        })
        .await;
    assert!(failed["errors"].to_string().contains("o2"), "{failed:#}");

    op.mark();
    session.stop().await.unwrap();
    op.until(VDA, "connection", |v| v["connectionState"] == "OFFLINE")
        .await;
    assert!(
        op.validated > 10,
        "only {} VDA 5050 messages validated",
        op.validated
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_carry_ids_and_a_repeat_is_not_applied_twice() {
    let broker = fleet_broker("ids", &["r1"], |_| String::new());
    let mut op = Observer::start(broker.port, "op-ids", OPERATOR.0, OPERATOR.1).await;
    let session = robot("ids", "r1", broker.port).await;
    op.until(VDA, "connection", |v| v["connectionState"] == "ONLINE")
        .await;

    let mut console = crate::fleet::connection(
        &format!("mqtt://127.0.0.1:{}", broker.port),
        Some(OPERATOR.0),
        None,
        None,
        None,
    )
    .unwrap();
    console.client_id = "console-ids".into();
    // The password for the operator, as `fleet --password-env` would give it.
    console.credentials = Some((OPERATOR.0.into(), crate::llm::Secret::new(OPERATOR.1)));
    let mut client = FleetClient::connect(&console);
    let id = client
        .send(
            "r1",
            Command::Say {
                text: "go to the kitchen".into(),
            },
        )
        .unwrap();
    loop {
        if let ClientEvent::Reply { robot, reply } = client.recv().await.unwrap() {
            assert_eq!(robot, "r1");
            assert_eq!(reply.id.as_deref(), Some(id.as_str()));
            assert_eq!(reply.status, ReplyStatus::Accepted);
            break;
        }
    }
    let queued = op
        .until("robobrain/r1", "events", |v| v["event"]["kind"] == "task")
        .await;
    // Where it came from: the fleet's command topic and the command's id
    // (MQTT names no broker user; the topic's ACL says who may write).
    assert_eq!(
        queued["event"]["origin"],
        json!({"door": "fleet", "role": "operator",
            "detail": format!("topic robobrain/r1/command, id {id}")}),
        "{queued:#}"
    );
    // The same envelope again (a console resending after a reconnect): dropped.
    let again = serde_json::to_vec(&Envelope {
        id: id.clone(),
        command: Command::Say {
            text: "go to the kitchen".into(),
        },
    })
    .unwrap();
    client
        .publish_raw("robobrain/r1/command", again)
        .await
        .unwrap();
    let reply = op
        .until("robobrain/r1", "reply", |v| v["status"] == "duplicate")
        .await;
    assert_eq!(reply["id"], id.as_str());
    op.mark();
    let tasks = op.until("robobrain/r1", "snapshot", |_| true).await;
    assert_eq!(tasks["tasks"].as_array().unwrap().len(), 1, "{tasks:#}");

    // Malformed and oversized commands: rejected, nothing else changes.
    client
        .publish_raw("robobrain/r1/command", b"{\"id\": 7".to_vec())
        .await
        .unwrap();
    let r = op
        .until("robobrain/r1", "reply", |v| v["status"] == "rejected")
        .await;
    assert_eq!(r["code"], "malformed");
    client
        .publish_raw(
            "robobrain/r1/command",
            vec![b'x'; bridge::MAX_COMMAND_BYTES + 1],
        )
        .await
        .unwrap();
    let r = op
        .until("robobrain/r1", "reply", |v| v["code"] == "too_large")
        .await;
    assert_eq!(r["topic"], "robobrain/r1/command");
    op.mark();
    let after = op.until("robobrain/r1", "snapshot", |_| true).await;
    assert_eq!(after["tasks"].as_array().unwrap().len(), 1);
    client.close().await;
    session.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acl_refuses_a_robot_that_publishes_on_another_robots_topics() {
    let broker = fleet_broker("acl", &["r1", "r2"], |_| String::new());
    let mut op = Observer::start(broker.port, "op-acl", OPERATOR.0, OPERATOR.1).await;
    // r2, logged in as itself, tries r1's snapshot, state and command topics,
    // then publishes on its own snapshot topic as a marker.
    let r2 = Observer::start(broker.port, "r2-rogue", "r2", &robot_password("r2")).await;
    for topic in [
        "robobrain/r1/snapshot",
        "uagv/v2/acme/r1/state",
        "robobrain/r1/command",
    ] {
        r2.client
            .publish(
                topic,
                QoS::AtLeastOnce,
                false,
                b"{\"forged\": true}".to_vec(),
            )
            .await
            .unwrap();
    }
    r2.client
        .publish(
            "robobrain/r2/snapshot",
            QoS::AtLeastOnce,
            false,
            b"{\"marker\": true}".to_vec(),
        )
        .await
        .unwrap();
    op.until("robobrain/r2", "snapshot", |v| v["marker"] == true)
        .await;
    // The broker handles one client's messages in order: the forged ones
    // would have come before the marker.
    for topic in [
        "robobrain/r1/snapshot",
        "uagv/v2/acme/r1/state",
        "robobrain/r1/command",
    ] {
        assert!(op.heard(topic).is_empty(), "{topic} got through");
    }
}

/// The operator's console connection to the broker at `port`.
fn console(port: u16, name: &str) -> FleetClient {
    let mut mqtt =
        crate::fleet::connection(&format!("mqtt://127.0.0.1:{port}"), None, None, None, None)
            .unwrap();
    mqtt.client_id = format!("console-{name}");
    mqtt.credentials = Some((OPERATOR.0.into(), crate::llm::Secret::new(OPERATOR.1)));
    FleetClient::connect(&mqtt)
}

/// The next event from `client` that `want` picks, within 30 s.
async fn heard<T>(client: &mut FleetClient, want: impl Fn(&ClientEvent) -> Option<T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let e = client.recv().await.unwrap();
            eprintln!(
                "DBG {:?}",
                format!("{e:?}").chars().take(150).collect::<String>()
            );
            if let Some(t) = want(&e) {
                return t;
            }
        }
    })
    .await
    .expect("heard within 30 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_loses_no_command_and_applies_none_twice_and_a_cut_off_robot_pauses() {
    let mut broker = fleet_broker("restart", &["r1"], |_| String::new());
    let mut config = robot_config("restart", "r1", broker.port);
    config.fleet.cutoff_pause_s = 1.0;
    let options = SessionOptions {
        pace: Pace::RealTime { speed: 2.0 },
        ..SessionOptions::new("fleet-test")
    };
    let session = Session::open(&config, options).await.unwrap();
    let mut client = console(broker.port, "restart");
    heard(&mut client, |e| {
        matches!(
            e,
            ClientEvent::Connection {
                state: ConnectionState::Online,
                ..
            }
        )
        .then_some(())
    })
    .await;

    // A task under way.
    let first = client
        .send(
            "r1",
            Command::Say {
                text: "go to the kitchen".into(),
            },
        )
        .unwrap();
    heard(&mut client, |e| match e {
        ClientEvent::Reply { reply, .. } if reply.id.as_deref() == Some(first.as_str()) => Some(()),
        _ => None,
    })
    .await;
    heard(&mut client, |e| match e {
        ClientEvent::Snapshot { snapshot, .. } => snapshot
            .tasks
            .iter()
            .any(|t| t.status == crate::protocol::TaskStatus::Running)
            .then_some(()),
        _ => None,
    })
    .await;

    // The broker goes away; a command sent meanwhile waits in the console.
    broker.stop();
    heard(&mut client, |e| {
        matches!(e, ClientEvent::Disconnected(_)).then_some(())
    })
    .await;
    let second = client.send("r1", Command::Resume).unwrap();
    // Cut off past `cutoff_pause_s` with a task under way: paused by the policy.
    let paused = || {
        session
            .runtime()
            .snapshot()
            .tasks
            .iter()
            .any(|t| t.status == crate::protocol::TaskStatus::Paused)
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !paused() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:#?}",
            session.runtime().snapshot().tasks
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let paused_at = session.runtime().snapshot().time;

    // Back: both reconnect; the waiting command (resume) arrives, once.
    broker.restart();
    let status = heard(&mut client, |e| match e {
        ClientEvent::Reply { reply, .. } if reply.id.as_deref() == Some(second.as_str()) => {
            Some(reply.status)
        }
        _ => None,
    })
    .await;
    assert_eq!(status, ReplyStatus::Accepted);
    // Resumed: the task runs again (its place kept).
    heard(&mut client, |e| match e {
        ClientEvent::Snapshot { snapshot, .. } => (snapshot.time > paused_at
            && snapshot
                .tasks
                .iter()
                .any(|t| t.status == crate::protocol::TaskStatus::Running))
        .then_some(()),
        _ => None,
    })
    .await;
    // The first command again, as a console that never heard its reply would: dropped.
    let again = serde_json::to_vec(&Envelope {
        id: first.clone(),
        command: Command::Say {
            text: "go to the study".into(),
        },
    })
    .unwrap();
    client
        .publish_raw("robobrain/r1/command", again)
        .await
        .unwrap();
    let status = heard(&mut client, |e| match e {
        ClientEvent::Reply { reply, .. } if reply.id.as_deref() == Some(first.as_str()) => {
            Some(reply.status)
        }
        _ => None,
    })
    .await;
    assert_eq!(status, ReplyStatus::Duplicate);
    let snapshot = session.runtime().snapshot();
    assert_eq!(snapshot.tasks.len(), 1, "{:#?}", snapshot.tasks);
    client.close().await;
    session.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robot_and_a_console_meet_over_tls_with_a_self_made_ca() {
    let mut certs = None;
    let broker = fleet_broker("tls", &["r1"], |dir| {
        crate::devices::mqtt::broker::certificates(dir);
        certs = Some(dir.to_path_buf());
        format!(
            "cafile {0}/ca.crt\ncertfile {0}/server.crt\nkeyfile {0}/server.key\n",
            dir.display()
        )
    });
    let certs = certs.unwrap();
    let url = format!("mqtts://127.0.0.1:{}", broker.port);
    let mut config = robot_config("tls", "r1", broker.port);
    config.fleet.broker = Some(url.clone());
    config.fleet.ca = Some(certs.join("ca.crt"));
    let session = Session::open(&config, SessionOptions::new("fleet-test"))
        .await
        .unwrap();
    let mut mqtt =
        crate::fleet::connection(&url, None, None, None, Some(&certs.join("ca.crt"))).unwrap();
    mqtt.client_id = "console-tls".into();
    mqtt.credentials = Some((OPERATOR.0.into(), crate::llm::Secret::new(OPERATOR.1)));
    let mut client = FleetClient::connect(&mqtt);
    heard(&mut client, |e| {
        matches!(e, ClientEvent::Hello { .. }).then_some(())
    })
    .await;
    heard(&mut client, |e| match e {
        ClientEvent::Connection {
            robot,
            state: ConnectionState::Online,
        } if robot == "r1" => Some(()),
        _ => None,
    })
    .await;
    // Without the CA, mqtts:// is refused before anything is sent.
    assert_eq!(
        crate::fleet::connection(&url, None, None, None, None)
            .unwrap_err()
            .to_string(),
        format!("fleet broker {url}: mqtts:// needs a CA certificate ([fleet] ca, --ca)")
    );
    client.close().await;
    session.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_from_two_consoles_is_given_once() {
    let broker = fleet_broker("twice", &["r1"], |_| String::new());
    let session = robot("twice", "r1", broker.port).await;
    let mut a = console(broker.port, "twice-a");
    let mut b = console(broker.port, "twice-b");
    a.send(
        "r1",
        Command::Say {
            text: "go to the study".into(),
        },
    )
    .unwrap();
    let approval = heard(&mut a, |e| match e {
        ClientEvent::Snapshot { snapshot, .. } => {
            snapshot.approvals.first().map(|x| x.approval_id.clone())
        }
        _ => None,
    })
    .await;
    // Two operators approve the same approval, each with its own command id.
    a.send(
        "r1",
        Command::Approve {
            approval_id: approval.clone(),
        },
    )
    .unwrap();
    b.send(
        "r1",
        Command::Approve {
            approval_id: approval.clone(),
        },
    )
    .unwrap();
    let mut approved = 0;
    let refused = heard(&mut a, |e| match e {
        ClientEvent::Event { event, .. } => match &event.kind {
            crate::protocol::EventKind::Approval {
                approval_id,
                status,
                ..
            } if *approval_id == approval
                && *status == crate::protocol::ApprovalStatus::Approved =>
            {
                Some(false)
            }
            crate::protocol::EventKind::Error { code, .. } if code == "unknown_approval" => {
                Some(true)
            }
            _ => None,
        },
        _ => None,
    })
    .await;
    if !refused {
        approved += 1;
        let again = heard(&mut a, |e| match e {
            ClientEvent::Event { event, .. } => match &event.kind {
                crate::protocol::EventKind::Error { code, .. } if code == "unknown_approval" => {
                    Some(true)
                }
                crate::protocol::EventKind::Approval {
                    approval_id,
                    status,
                    ..
                } if *approval_id == approval
                    && *status == crate::protocol::ApprovalStatus::Approved =>
                {
                    Some(false)
                }
                _ => None,
            },
            _ => None,
        })
        .await;
        assert!(again, "the approval was given twice");
    }
    assert_eq!(approved, 1, "the approval was refused before it was given");
    a.close().await;
    b.close().await;
    session.stop().await.unwrap();
}

/// A broker whose ACL does not let the robot publish its connection
/// message: mosquitto drops the ONLINE without a word, and robobrain says
/// so — an `mqtt_refused` error naming the topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_message_the_acl_denies_is_reported_not_silent() {
    let broker = fleet_broker("acl-conn", &["r1"], |dir| {
        let acl = std::fs::read_to_string(dir.join("acl")).unwrap();
        let denied = acl.replace(
            "pattern readwrite uagv/v2/+/%u/connection\n",
            "pattern read uagv/v2/+/%u/connection\n",
        );
        assert_ne!(acl, denied, "the ACL changed: update this test");
        std::fs::write(dir.join("acl"), denied).unwrap();
        String::new()
    });
    let mut session = robot("acl-conn", "r1", broker.port).await;
    let mut events = session.take_events();
    let refused = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let Ok(e) = events.recv().await else {
                continue;
            };
            if let crate::protocol::EventKind::Error { code, message } = e.kind
                && code == "mqtt_refused"
            {
                return message;
            }
        }
    })
    .await
    .expect("the refusal is said within 30 s");
    assert!(
        refused.contains("uagv/v2/acme/r1/connection"),
        "the topic is named: {refused}"
    );
    session.stop().await.unwrap();
}

/// The waiting-for-state of the table below: the newest `state` with an
/// error of `error_type` naming order `id`.
async fn refused_with(op: &mut Observer, id: &str, error_type: &str) -> Value {
    op.until(VDA, "state", |v| {
        v["errors"].as_array().is_some_and(|e| {
            e.iter().any(|e| {
                e["errorType"] == error_type && e["errorReferences"].to_string().contains(id)
            })
        })
    })
    .await
}

/// An order table through a real robot on mosquitto, every message checked
/// against the schemas: each bad order refused with its error before
/// anything drives (the robot never moves, its state names the order);
/// a good one driven at once (a state with `driving` true goes out as the
/// base starts); `cancelOrder` RUNNING until the base stands still, then
/// FINISHED; `stateRequest` answered with a state; state and visualization
/// on QoS 0, connection on QoS 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_row_by_row_through_a_robot_on_a_broker() {
    let broker = fleet_broker("table", &["r1"], |_| String::new());
    let schemas = Schemas::load();
    let mut op = Observer::start(broker.port, "op-table", OPERATOR.0, OPERATOR.1).await;
    let session = robot("table", "r1", broker.port).await;
    let start = op.until(VDA, "state", |_| true).await;
    let good = || order("good", &["living_room", "hallway", "kitchen"]);
    let with = |id: &str, f: &dyn Fn(&mut Value)| {
        let mut o = good();
        o["orderId"] = json!(id);
        f(&mut o);
        o
    };
    let rows: Vec<(Value, &str)> = vec![
        (
            with("far", &|o| {
                o["nodes"][0]["nodeId"] = json!("bedroom");
                o["edges"][0]["startNodeId"] = json!("bedroom");
            }),
            "noRouteError",
        ),
        (
            with("wall", &|o| {
                o["nodes"][2]["nodePosition"] = json!({"x": 0.1, "y": 0.1, "mapId": "apartment"});
            }),
            "noRouteError",
        ),
        (
            with("offmap", &|o| {
                o["nodes"][2]["nodePosition"] = json!({"x": 40.0, "y": 6.0, "mapId": "apartment"});
            }),
            "noRouteError",
        ),
        (
            with("edges", &|o| {
                o["edges"].as_array_mut().unwrap().pop();
            }),
            "validationError",
        ),
        (
            with("released", &|o| o["edges"][0]["released"] = json!(false)),
            "validationError",
        ),
        (
            with(
                "trajectory",
                &|o| o["edges"][0]["trajectory"] = json!({"degree": 1.0, "knotVector": [0.0, 1.0], "controlPoints": [{"x": 4.0, "y": 6.5}, {"x": 11.0, "y": 5.1}]}),
            ),
            "orderError",
        ),
        (
            with("pick", &|o| {
                o["nodes"][1]["actions"] =
                    json!([{"actionType": "pick", "actionId": "p1", "blockingType": "HARD"}]);
            }),
            "orderError",
        ),
    ];
    for (n, (row, error_type)) in rows.iter().enumerate() {
        let id = row["orderId"].as_str().unwrap();
        let mut row = row.clone();
        row["headerId"] = json!(10 + n);
        master(&mut op, &schemas, &format!("{VDA}/order"), "order", &row).await;
        let state = refused_with(&mut op, id, error_type).await;
        assert_eq!(
            state["orderId"], "",
            "{id}: taken though refused: {state:#}"
        );
        assert_eq!(state["driving"], false, "{id}: {state:#}");
        assert_eq!(
            state["agvPosition"], start["agvPosition"],
            "{id}: the robot moved"
        );
    }
    // stateRequest: a state, the action FINISHED.
    act(&mut op, &schemas, 30, "stateRequest", "q1").await;
    op.until(VDA, "state", |v| {
        v["actionStates"].as_array().is_some_and(|a| {
            a.iter()
                .any(|a| a["actionId"] == "q1" && a["actionStatus"] == "FINISHED")
        })
    })
    .await;
    // The good order drives; the errors of the refused ones are gone.
    master(&mut op, &schemas, &format!("{VDA}/order"), "order", &good()).await;
    let driving = op
        .until(VDA, "state", |v| {
            v["orderId"] == "good" && v["driving"] == true
        })
        .await;
    assert_eq!(driving["errors"], json!([]), "{driving:#}");
    assert_eq!(driving["lastNodeId"], "living_room");
    assert_eq!(
        driving["velocity"]["vy"], 0.0,
        "the vehicle's frame: {driving:#}"
    );
    assert_eq!(op.qos_of(&format!("{VDA}/state")), Some(0));
    assert_eq!(op.qos_of(&format!("{VDA}/visualization")), Some(0));
    assert_eq!(op.qos_of(&format!("{VDA}/connection")), Some(1));
    // cancelOrder: RUNNING while the base still rolls, FINISHED standing.
    act(&mut op, &schemas, 31, "cancelOrder", "c1").await;
    let status = |v: &Value| {
        v["actionStates"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["actionId"] == "c1"))
            .map(|a| a["actionStatus"].clone())
    };
    let running = op.until(VDA, "state", |v| status(v).is_some()).await;
    assert_eq!(status(&running), Some(json!("RUNNING")), "{running:#}");
    let finished = op
        .until(VDA, "state", |v| status(v) == Some(json!("FINISHED")))
        .await;
    assert_eq!(
        finished["driving"], false,
        "FINISHED while driving: {finished:#}"
    );
    assert_eq!(finished["nodeStates"], json!([]));
    assert_eq!(finished["orderId"], "good", "the ids are kept");
    // Every state from then on: standing still.
    op.mark();
    for _ in 0..3 {
        op.mark();
        let after = op.until(VDA, "state", |_| true).await;
        assert_eq!(after["driving"], false, "{after:#}");
    }
    session.stop().await.unwrap();
}
