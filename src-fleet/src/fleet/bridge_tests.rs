//! The bridge message by message: VDA 5050 in, publishes and commands out.

use serde_json::{Value, json};

use super::*;
use crate::protocol::{Priority, TaskView};

fn bridge() -> Bridge {
    Bridge::new(Identity {
        topics: Topics::new("acme", "r1"),
        world: World::builtin("apartment").unwrap(),
    })
}

fn header(serial: &str) -> Value {
    json!({"headerId": 1, "timestamp": "2026-11-27T08:00:00.000Z", "version": "2.1.0",
           "manufacturer": "acme", "serialNumber": serial})
}

fn with_header(serial: &str, body: &Value) -> Vec<u8> {
    let mut v = header(serial);
    v.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    serde_json::to_vec(&v).unwrap()
}

fn instant(action_type: &str, id: &str) -> Vec<u8> {
    with_header(
        "r1",
        &json!({"actions": [{"actionType": action_type, "actionId": id, "blockingType": "HARD"}]}),
    )
}

fn commands(effects: &[Effect]) -> Vec<Command> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Command { command, .. } => Some(command.clone()),
            Effect::Publish(_) => None,
        })
        .collect()
}

fn published(effects: &[Effect], kind_leaf: &str) -> Vec<Value> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Publish(p) if p.topic.ends_with(&format!("/{kind_leaf}")) => {
                Some(serde_json::from_slice(&p.payload).unwrap())
            }
            _ => None,
        })
        .collect()
}

fn order(id: &str, update: u64, nodes: &[(&str, Option<(f64, f64)>)]) -> Vec<u8> {
    let nodes: Vec<Value> = nodes
        .iter()
        .enumerate()
        .map(|(i, (node, pos))| {
            let mut n =
                json!({"nodeId": node, "sequenceId": i * 2, "released": true, "actions": []});
            if let Some((x, y)) = pos {
                n["nodePosition"] = json!({"x": x, "y": y, "mapId": "apartment"});
            }
            n
        })
        .collect();
    let edges: Vec<Value> = (1..nodes.len())
        .map(|i| {
            json!({"edgeId": format!("e{i}"), "sequenceId": i * 2 - 1, "released": true,
                   "startNodeId": nodes[i - 1]["nodeId"], "endNodeId": nodes[i]["nodeId"], "actions": []})
        })
        .collect();
    with_header(
        "r1",
        &json!({"orderId": id, "orderUpdateId": update, "nodes": nodes, "edges": edges}),
    )
}

#[test]
fn instant_actions_map_to_pause_resume_and_the_e_stop() {
    let mut b = bridge();
    let t = "uagv/v2/acme/r1/instantActions";
    assert_eq!(
        commands(&b.message(t, &instant("startPause", "a1"), 0)),
        [Command::Pause]
    );
    assert_eq!(
        commands(&b.message(t, &instant("stopPause", "a2"), 0)),
        [Command::Resume]
    );
    assert_eq!(
        commands(&b.message(t, &instant("eStop", "a3"), 0)),
        [Command::EStop]
    );
    // The same action id again is not applied again ...
    assert_eq!(commands(&b.message(t, &instant("stopPause", "a2"), 0)), []);
    // ... but an E-stop is never a duplicate: the same one again stops again.
    assert_eq!(
        commands(&b.message(t, &instant("eStop", "a3"), 0)),
        [Command::EStop]
    );
    let out = b.message(t, &instant("factsheetRequest", "a4"), 0);
    assert_eq!(published(&out, "factsheet")[0]["serialNumber"], "r1");
    let out = b.message(t, &instant("dance", "a5"), 0);
    let state = &published(&out, "state")[0];
    let statuses: Vec<&Value> = state["actionStates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["actionStatus"])
        .collect();
    assert_eq!(
        statuses,
        ["FINISHED", "FINISHED", "FINISHED", "FINISHED", "FAILED"]
    );
    assert_eq!(state["errors"][0]["errorType"], "validationError");
    // cancelOrder with no order: failed, said in errors.
    let out = b.message(t, &instant("cancelOrder", "a6"), 0);
    assert_eq!(commands(&out), []);
    assert_eq!(
        published(&out, "state")[0]["errors"][1]["errorType"],
        "noOrderToCancel"
    );
}

#[test]
fn an_estop_release_never_restarts_the_task_the_estop_set_aside() {
    let mut b = bridge();
    let t = "uagv/v2/acme/r1/instantActions";
    assert_eq!(
        commands(&b.message(t, &instant("eStop", "s1"), 0)),
        [Command::EStop]
    );
    let out = b.message(t, &instant("eStopRelease", "s2"), 0);
    assert_eq!(
        commands(&out),
        [Command::ResetEStop],
        "a release resets the latch and resumes nothing"
    );
    let state = &published(&out, "state")[0];
    let release = state["actionStates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["actionId"] == "s2")
        .unwrap();
    assert_eq!(release["actionType"], "eStopRelease");
    assert_eq!(release["actionStatus"], "FINISHED", "{release}");
}

/// A snapshot of the robot standing at the apartment's start (4.0, 6.5),
/// in the living room; `linear` its forward speed.
fn standing(b: &mut Bridge, linear: f64) -> Vec<Publish> {
    let mut s = Snapshot::default();
    s.robot.pose = crate::geometry::Pose {
        x: 4.0,
        y: 6.5,
        theta: 1.0,
    };
    s.robot.twist.linear = linear;
    b.snapshot(&s, 0)
}

fn task(id: &str, status: TaskStatus, step: usize, steps: usize) -> TaskView {
    TaskView {
        id: id.into(),
        title: "chain".into(),
        kind: "chain".into(),
        priority: Priority::Main,
        status,
        step,
        steps,
        deadline: None,
    }
}

fn task_event(task: &TaskView, reason: &str) -> Event {
    Event {
        seq: 1,
        time: 0.0,
        wall_ms: 0,
        thread_id: "t".into(),
        step: 0,
        origin: None,
        kind: EventKind::Task {
            task: task.clone(),
            reason: reason.into(),
        },
    }
}

fn state_of(effects: &[Effect]) -> Value {
    published(effects, "state").pop().expect("a state")
}

const ORDER: &str = "uagv/v2/acme/r1/order";
const INSTANT: &str = "uagv/v2/acme/r1/instantActions";

#[test]
fn an_order_is_one_chain_of_navigations_and_its_progress_is_in_state() {
    let mut b = bridge();
    standing(&mut b, 0.0);
    let out = b.message(
        ORDER,
        &order(
            "o1",
            0,
            &[
                ("living_room", None),
                ("kitchen", None),
                ("p2", Some((2.0, 6.0))),
            ],
        ),
        0,
    );
    let cmds = commands(&out);
    let [Command::Chain { call_id, calls }] = cmds.as_slice() else {
        panic!("not a chain: {cmds:?}")
    };
    assert_eq!(call_id, "vda-o1-0");
    // The first node is where the robot stands: reached already.
    assert_eq!(calls[0].args, json!({"zone": "kitchen"}));
    assert_eq!(calls[1].args, json!({"x": 2.0, "y": 6.0}));
    let state = state_of(&out);
    assert_eq!(state["orderId"], "o1");
    assert_eq!(state["lastNodeId"], "living_room");
    assert_eq!(state["nodeStates"].as_array().unwrap().len(), 2);
    assert_eq!(state["edgeStates"].as_array().unwrap().len(), 2);

    // The kernel queues it; the first node is reached; then it succeeds.
    b.event(&task_event(
        &task("t1", TaskStatus::Queued, 0, 2),
        "chain vda-o1-0",
    ));
    let out = b.event(&task_event(&task("t1", TaskStatus::Running, 1, 2), "step"));
    let state = state_of(&out);
    assert_eq!(state["lastNodeId"], "kitchen");
    assert_eq!(state["lastNodeSequenceId"], 2);
    assert_eq!(state["nodeStates"][0]["nodeId"], "p2");
    // Another order while this one runs is refused the VDA 5050 way.
    let out = b.message(ORDER, &order("o2", 0, &[("kitchen", None)]), 0);
    assert_eq!(commands(&out), []);
    assert_eq!(state_of(&out)["errors"][0]["errorType"], "orderError");
    let out = b.event(&task_event(
        &task("t1", TaskStatus::Succeeded, 2, 2),
        "done",
    ));
    let state = state_of(&out);
    assert_eq!(state["lastNodeId"], "p2");
    assert_eq!(state["nodeStates"], json!([]));
    // The same order again is nothing new.
    assert_eq!(
        commands(&b.message(ORDER, &order("o1", 0, &[("living_room", None)]), 0)),
        []
    );
}

#[test]
fn an_order_the_kernel_refuses_is_an_order_error() {
    let mut b = bridge();
    standing(&mut b, 0.0);
    b.message(
        ORDER,
        &order("o1", 0, &[("living_room", None), ("study", None)]),
        0,
    );
    let queued = task("t4", TaskStatus::Queued, 0, 1);
    b.event(&task_event(&queued, "chain vda-o1-0"));
    b.event(&Event {
        kind: EventKind::Guardrail {
            task_id: "t4".into(),
            op: crate::protocol::Op::Wait { seconds: 0.0 },
            verdict: Verdict::Rejected,
            reason: "not allowed".into(),
        },
        ..task_event(&queued, "")
    });
    let out = b.event(&task_event(
        &task("t4", TaskStatus::Aborted, 0, 1),
        "gave up",
    ));
    let state = state_of(&out);
    assert_eq!(state["errors"][0]["errorType"], "orderError");
    assert_eq!(
        state["errors"][0]["errorDescription"],
        "order `o1` failed: the kernel refused: not allowed"
    );
    assert_eq!(state["nodeStates"], json!([]), "a failed order is deleted");
    assert_eq!(state["lastNodeId"], "living_room");
}

/// The order every row of the table below changes: from the living room
/// (where the robot stands) to the kitchen and a point in the living room,
/// the last node and its edge the horizon.
fn base_order() -> Value {
    let mut o: Value = serde_json::from_slice(&order(
        "o1",
        0,
        &[
            ("living_room", None),
            ("kitchen", None),
            ("p2", Some((2.0, 6.0))),
        ],
    ))
    .unwrap();
    o["nodes"][2]["released"] = json!(false);
    o["edges"][1]["released"] = json!(false);
    o
}

fn changed(f: impl FnOnce(&mut Value)) -> Value {
    let mut o = base_order();
    f(&mut o);
    o
}

/// Every row: an order, and what the robot must do with it — drive (a
/// chain of so many calls) or refuse it with this error, before anything
/// drives.
#[test]
fn orders_row_by_row_are_driven_or_refused_as_the_standard_says() {
    let schemas = crate::fleet::testkit::Schemas::load();
    let world = World::builtin("apartment").unwrap();
    assert!(
        !world.is_free(crate::geometry::Point::new(0.1, 0.1)),
        "(0.1, 0.1) is a wall"
    );
    let action = json!({"actionType": "pick", "actionId": "a1", "blockingType": "HARD"});
    let rows: Vec<(&str, Value, Result<usize, &str>)> = vec![
        ("a base and a horizon", base_order(), Ok(1)),
        (
            "theta 7.0",
            changed(|o| o["nodes"][2]["nodePosition"]["theta"] = json!(7.0)),
            Err("validationError"),
        ),
        (
            "edges ≠ nodes − 1",
            changed(|o| {
                o["edges"].as_array_mut().unwrap().pop();
            }),
            Err("validationError"),
        ),
        (
            "an edge joining other nodes",
            changed(|o| o["edges"][0]["endNodeId"] = json!("p2")),
            Err("validationError"),
        ),
        (
            "a released node after an unreleased edge",
            changed(|o| o["nodes"][2]["released"] = json!(true)),
            Err("validationError"),
        ),
        (
            "an odd node sequenceId",
            changed(|o| o["nodes"][1]["sequenceId"] = json!(3)),
            Err("validationError"),
        ),
        (
            "an edge sequenceId out of place",
            changed(|o| o["edges"][0]["sequenceId"] = json!(5)),
            Err("validationError"),
        ),
        (
            "an unreleased first node",
            changed(|o| {
                for n in o["nodes"].as_array_mut().unwrap() {
                    n["released"] = json!(false);
                }
                for e in o["edges"].as_array_mut().unwrap() {
                    e["released"] = json!(false);
                }
            }),
            Err("validationError"),
        ),
        (
            "no node",
            changed(|o| {
                o["nodes"] = json!([]);
                o["edges"] = json!([]);
            }),
            Err("validationError"),
        ),
        (
            "a first node 8 m from the robot",
            changed(|o| {
                o["nodes"][0]["nodeId"] = json!("bedroom");
                o["edges"][0]["startNodeId"] = json!("bedroom");
            }),
            Err("noRouteError"),
        ),
        (
            "a node inside a wall",
            changed(|o| {
                o["nodes"][2]["nodePosition"] = json!({"x": 0.1, "y": 0.1, "mapId": "apartment"});
            }),
            Err("noRouteError"),
        ),
        (
            "a zone node whose position is in a wall",
            changed(|o| {
                o["nodes"][1]["nodePosition"] = json!({"x": 0.1, "y": 0.1, "mapId": "apartment"});
            }),
            Err("noRouteError"),
        ),
        (
            "a node off the map",
            changed(|o| {
                o["nodes"][2]["nodePosition"] = json!({"x": 99.0, "y": 6.0, "mapId": "apartment"});
            }),
            Err("noRouteError"),
        ),
        (
            "a node on another map",
            changed(|o| o["nodes"][2]["nodePosition"]["mapId"] = json!("warehouse")),
            Err("noRouteError"),
        ),
        (
            "a node neither zone nor position",
            changed(|o| {
                o["nodes"][1]["nodeId"] = json!("nowhere");
                o["edges"][0]["endNodeId"] = json!("nowhere");
                o["edges"][1]["startNodeId"] = json!("nowhere");
            }),
            Err("noRouteError"),
        ),
        (
            "an edge trajectory",
            changed(
                |o| o["edges"][0]["trajectory"] = json!({"degree": 1.0, "knotVector": [0.0, 1.0], "controlPoints": [{"x": 4.0, "y": 6.5}, {"x": 8.25, "y": 2.0}]}),
            ),
            Err("orderError"),
        ),
        (
            "a pick on a node",
            changed(|o| o["nodes"][1]["actions"] = json!([action])),
            Err("orderError"),
        ),
        (
            "a custom action on an edge",
            changed(|o| {
                o["edges"][0]["actions"] =
                    json!([{"actionType": "beep", "actionId": "a2", "blockingType": "NONE"}]);
            }),
            Err("orderError"),
        ),
    ];
    for (what, order, want) in rows {
        let mut b = bridge();
        standing(&mut b, 0.0);
        // A master control written from the schema never sends one the
        // schema refuses; a robot refuses it as a validationError.
        if !schemas.valid("order", &order) {
            assert_eq!(
                want,
                Err("validationError"),
                "{what}: the schema refuses it"
            );
        }
        let out = b.message(ORDER, &serde_json::to_vec(&order).unwrap(), 0);
        let state = state_of(&out);
        schemas.check("state", &state);
        match want {
            Ok(calls) => {
                let cmds = commands(&out);
                let [Command::Chain { calls: got, .. }] = cmds.as_slice() else {
                    panic!("{what}: not driven: {cmds:?} {state:#}")
                };
                assert_eq!(got.len(), calls, "{what}");
                assert_eq!(state["errors"], json!([]), "{what}");
            }
            Err(error_type) => {
                assert_eq!(commands(&out), [], "{what}: driven though invalid");
                assert_eq!(
                    state["errors"][0]["errorType"], error_type,
                    "{what}: {state:#}"
                );
                let refs = state["errors"][0]["errorReferences"].to_string();
                assert!(refs.contains("\"orderId\""), "{what}: {refs}");
                assert_eq!(state["orderId"], "", "{what}: taken though refused");
            }
        }
    }
}

#[test]
fn the_horizon_and_the_last_node_stay_and_an_update_stitches_to_the_base() {
    let mut b = bridge();
    standing(&mut b, 0.0);
    b.message(ORDER, &serde_json::to_vec(&base_order()).unwrap(), 0);
    b.event(&task_event(
        &task("t1", TaskStatus::Queued, 0, 1),
        "chain vda-o1-0",
    ));
    // At the decision point: the base is done, the horizon still shown.
    let out = b.event(&task_event(
        &task("t1", TaskStatus::Succeeded, 1, 1),
        "done",
    ));
    let state = state_of(&out);
    assert_eq!(state["lastNodeId"], "kitchen");
    assert_eq!(state["nodeStates"][0]["nodeId"], "p2");
    assert_eq!(state["nodeStates"][0]["released"], false);
    assert_eq!(state["edgeStates"][0]["released"], false);
    // A new order while it waits for an update is refused.
    let out = b.message(ORDER, &order("o2", 0, &[("kitchen", None)]), 0);
    assert_eq!(state_of(&out)["errors"][0]["errorType"], "orderError");
    // An update that does not start at the base's last node is refused.
    let mut update = changed(|o| o["orderUpdateId"] = json!(1));
    let out = b.message(ORDER, &serde_json::to_vec(&update).unwrap(), 0);
    let state = state_of(&out);
    assert_eq!(state["errors"][1]["errorType"], "orderUpdateError");
    assert_eq!(state["lastNodeId"], "kitchen", "kept");
    // One that does: kitchen (sequenceId 2) → p2 released.
    update["nodes"] = json!([update["nodes"][1].clone(), update["nodes"][2].clone()]);
    update["nodes"][1]["released"] = json!(true);
    update["edges"] = json!([update["edges"][1].clone()]);
    update["edges"][0]["released"] = json!(true);
    let out = b.message(ORDER, &serde_json::to_vec(&update).unwrap(), 0);
    let cmds = commands(&out);
    let [Command::Chain { call_id, calls }] = cmds.as_slice() else {
        panic!("the update is not driven: {cmds:?}")
    };
    assert_eq!((call_id.as_str(), calls.len()), ("vda-o1-1", 1));
    let state = state_of(&out);
    assert_eq!(state["orderUpdateId"], 1);
    assert_eq!(state["lastNodeId"], "kitchen", "not reset by an update");
    assert_eq!(state["lastNodeSequenceId"], 2);
    assert_eq!(state["errors"], json!([]));
    assert_eq!(state["nodeStates"][0]["released"], true);
}

#[test]
fn cancel_order_runs_until_the_base_stands_still_and_a_new_order_clears_finished_actions() {
    let mut b = bridge();
    standing(&mut b, 0.0);
    b.message(
        ORDER,
        &order("o1", 0, &[("living_room", None), ("kitchen", None)]),
        0,
    );
    b.event(&task_event(
        &task("t1", TaskStatus::Running, 0, 1),
        "chain vda-o1-0",
    ));
    standing(&mut b, 0.4);
    let out = b.message(INSTANT, &instant("cancelOrder", "c1"), 0);
    assert_eq!(commands(&out), [Command::Stop]);
    let cancel = |s: &Value| {
        s["actionStates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["actionId"] == "c1")
            .unwrap()["actionStatus"]
            .clone()
    };
    assert_eq!(cancel(&state_of(&out)), "RUNNING");
    // A new order while the cancel runs is refused.
    let out = b.message(ORDER, &order("o2", 0, &[("living_room", None)]), 0);
    assert_eq!(state_of(&out)["errors"][0]["errorType"], "orderError");
    // The task has ended but the base still rolls: still RUNNING.
    b.event(&task_event(
        &task("t1", TaskStatus::Cancelled, 0, 1),
        "stopped",
    ));
    let publishes = standing(&mut b, 0.2);
    let state: Value = serde_json::from_slice(&publishes[1].payload).unwrap();
    assert_eq!(cancel(&state), "RUNNING");
    assert_eq!(state["driving"], true);
    // Standing still: FINISHED, the order deleted, its ids kept.
    let publishes = standing(&mut b, 0.0);
    let state: Value = serde_json::from_slice(&publishes[1].payload).unwrap();
    assert_eq!(cancel(&state), "FINISHED");
    assert_eq!(
        (state["orderId"].as_str(), state["nodeStates"].clone()),
        (Some("o1"), json!([]))
    );
    // A second cancel: no order.
    let out = b.message(INSTANT, &instant("cancelOrder", "c2"), 0);
    assert_eq!(commands(&out), []);
    assert!(
        state_of(&out)["errors"]
            .to_string()
            .contains("noOrderToCancel")
    );
    // A new order (not an update) clears the finished and failed action states.
    let out = b.message(
        ORDER,
        &order("o2", 0, &[("living_room", None), ("kitchen", None)]),
        0,
    );
    assert_eq!(state_of(&out)["actionStates"], json!([]));
}

#[test]
fn state_goes_out_when_driving_changes_and_velocity_is_the_vehicles() {
    let mut b = bridge();
    standing(&mut b, 0.0);
    let mut s = Snapshot::default();
    s.robot.pose = crate::geometry::Pose {
        x: 4.0,
        y: 6.5,
        theta: 1.0,
    };
    assert!(b.snapshot_changed(&s, 0).is_empty(), "nothing changed");
    s.robot.twist.linear = 0.5;
    let out = b.snapshot_changed(&s, 0);
    let state: Value = serde_json::from_slice(&out[0].payload).unwrap();
    assert_eq!(state["driving"], true);
    // Forward in the vehicle's frame, whatever its heading on the map.
    assert_eq!(
        (
            state["velocity"]["vx"].as_f64(),
            state["velocity"]["vy"].as_f64()
        ),
        (Some(0.5), Some(0.0))
    );
    assert_eq!(out[0].qos, Qos::AtMostOnce, "state is QoS 0 (§6.2)");
    assert!(b.snapshot_changed(&s, 0).is_empty());
    s.robot.twist.linear = 0.0;
    assert_eq!(
        b.snapshot_changed(&s, 0).len(),
        2,
        "stopping is said at once too"
    );
}

#[test]
fn state_request_and_init_position_are_answered() {
    let mut b = bridge();
    standing(&mut b, 0.0);
    let out = b.message(INSTANT, &instant("stateRequest", "q1"), 0);
    let state = state_of(&out);
    assert_eq!(state["actionStates"][0]["actionStatus"], "FINISHED");
    let init = |x: f64, id: &str| {
        with_header(
            "r1",
            &json!({"actions": [{"actionType": "initPosition", "actionId": id, "blockingType": "HARD",
            "actionParameters": [{"key": "x", "value": x}, {"key": "y", "value": 6.5}, {"key": "theta", "value": 0.0},
                                 {"key": "mapId", "value": "apartment"}, {"key": "lastNodeId", "value": "living_room"}]}]}),
        )
    };
    let state = state_of(&b.message(INSTANT, &init(4.1, "i1"), 0));
    assert_eq!(
        state["actionStates"][1]["actionStatus"], "FINISHED",
        "{state:#}"
    );
    assert_eq!(state["lastNodeId"], "living_room");
    let state = state_of(&b.message(INSTANT, &init(9.0, "i2"), 0));
    assert_eq!(
        state["actionStates"][2]["actionStatus"], "FAILED",
        "{state:#}"
    );
    let out = b.message(INSTANT, &instant("factsheetRequest", "f1"), 0);
    let sheet = &published(&out, "factsheet")[0];
    crate::fleet::testkit::Schemas::load().check("factsheet", sheet);
    let types: Vec<&str> = sheet["protocolFeatures"]["agvActions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["actionType"].as_str().unwrap())
        .collect();
    assert!(
        types.contains(&"initPosition") && types.contains(&"stateRequest"),
        "{types:?}"
    );
}

#[test]
fn bad_orders_and_commands_are_rejected_and_change_nothing() {
    let mut b = bridge();
    let t = "uagv/v2/acme/r1/order";
    for (payload, code) in [
        (b"not json".to_vec(), "malformed"),
        (vec![b' '; MAX_ORDER_BYTES + 1], "too_large"),
        (
            order("o1", 0, &[("living_room", None), ("nowhere", None)]),
            "",
        ),
        (
            with_header(
                "r9",
                &json!({"orderId": "o", "orderUpdateId": 0, "nodes": [], "edges": []}),
            ),
            "not_addressed",
        ),
    ] {
        let out = b.message(t, &payload, 0);
        assert_eq!(commands(&out), [], "{code}");
        let state = &published(&out, "state")[0];
        assert_eq!(state["orderId"], "", "{code}");
        if !code.is_empty() {
            assert_eq!(published(&out, "reply")[0]["code"], code);
        }
    }
    let c = "robobrain/r1/command";
    let out = b.message(c, b"{\"id\": \"x1\", \"command\": {\"cmd\": \"fly\"}}", 0);
    let reply = &published(&out, "reply")[0];
    assert_eq!(
        (reply["id"].as_str(), reply["status"].as_str()),
        (Some("x1"), Some("rejected"))
    );
    let out = b.message(c, &vec![b'{'; MAX_COMMAND_BYTES + 1], 0);
    assert_eq!(published(&out, "reply")[0]["code"], "too_large");
    // A good one, then its repeat.
    let good = br#"{"id": "x2", "command": {"cmd": "pause"}}"#;
    assert_eq!(commands(&b.message(c, good, 0)), [Command::Pause]);
    let out = b.message(c, good, 0);
    assert_eq!(commands(&out), []);
    assert_eq!(published(&out, "reply")[0]["status"], "duplicate");
    // The E-stop is never a duplicate.
    let estop = br#"{"id": "x4", "command": {"cmd": "estop"}}"#;
    for _ in 0..2 {
        let out = b.message(c, estop, 0);
        assert_eq!(commands(&out), [Command::EStop]);
    }
    let out = b.message(c, br#"{"id": "x3", "command": {"cmd": "shutdown"}}"#, 0);
    assert_eq!(published(&out, "reply")[0]["status"], "refused");
}
