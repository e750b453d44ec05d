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

#[test]
fn an_order_is_one_chain_of_navigations_and_its_progress_is_in_state() {
    let mut b = bridge();
    let t = "uagv/v2/acme/r1/order";
    let out = b.message(
        t,
        &order("o1", 0, &[("kitchen", None), ("p2", Some((2.0, 3.0)))]),
        0,
    );
    let cmds = commands(&out);
    let [Command::Chain { call_id, calls }] = cmds.as_slice() else {
        panic!("not a chain: {cmds:?}")
    };
    assert_eq!(call_id, "vda-o1-0");
    assert_eq!(calls[0].args, json!({"zone": "kitchen"}));
    assert_eq!(calls[1].args, json!({"x": 2.0, "y": 3.0}));
    let state = &published(&out, "state")[0];
    assert_eq!(state["orderId"], "o1");
    assert_eq!(state["nodeStates"].as_array().unwrap().len(), 2);
    assert_eq!(state["edgeStates"].as_array().unwrap().len(), 1);

    // The kernel queues it; the first node is reached; then it succeeds.
    let mut task = TaskView {
        id: "t1".into(),
        title: "chain".into(),
        kind: "chain".into(),
        priority: Priority::Main,
        status: TaskStatus::Queued,
        step: 0,
        steps: 2,
        deadline: None,
    };
    let event = |task: &TaskView, reason: &str| Event {
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
    };
    b.event(&event(&task, "chain vda-o1-0"));
    task.status = TaskStatus::Running;
    task.step = 1;
    let out = b.event(&event(&task, "step done"));
    let state: Value = serde_json::from_slice(&out[1].payload).unwrap();
    assert_eq!(state["lastNodeId"], "kitchen");
    assert_eq!(state["nodeStates"][0]["nodeId"], "p2");
    // Another order while this one runs is refused the VDA 5050 way.
    let out = b.message(t, &order("o2", 0, &[("bedroom", None)]), 0);
    assert_eq!(commands(&out), []);
    assert_eq!(
        published(&out, "state")[0]["errors"][0]["errorType"],
        "orderError"
    );
    task.status = TaskStatus::Succeeded;
    let out = b.event(&event(&task, "done"));
    let state: Value = serde_json::from_slice(&out[1].payload).unwrap();
    assert_eq!(state["lastNodeId"], "p2");
    assert_eq!(state["nodeStates"], json!([]));
    // The same order again is nothing new; an older update is an error.
    assert_eq!(
        commands(&b.message(t, &order("o1", 0, &[("kitchen", None)]), 0)),
        []
    );
}

#[test]
fn an_order_the_kernel_refuses_is_an_order_error() {
    let mut b = bridge();
    let t = "uagv/v2/acme/r1/order";
    b.message(t, &order("o1", 0, &[("p", Some((99.0, 99.0)))]), 0);
    let task = TaskView {
        id: "t4".into(),
        title: "chain".into(),
        kind: "chain".into(),
        priority: Priority::Main,
        status: TaskStatus::Queued,
        step: 0,
        steps: 1,
        deadline: None,
    };
    let ev = |kind| Event {
        seq: 1,
        time: 0.0,
        wall_ms: 0,
        thread_id: "t".into(),
        step: 0,
        origin: None,
        kind,
    };
    b.event(&ev(EventKind::Task {
        task: task.clone(),
        reason: "chain vda-o1-0".into(),
    }));
    b.event(&ev(EventKind::Guardrail {
        task_id: "t4".into(),
        op: crate::protocol::Op::Wait { seconds: 0.0 },
        verdict: Verdict::Rejected,
        reason: "off the map".into(),
    }));
    let out = b.event(&ev(EventKind::Task {
        task: TaskView {
            status: TaskStatus::Aborted,
            ..task
        },
        reason: "gave up".into(),
    }));
    let state: Value = serde_json::from_slice(&out[1].payload).unwrap();
    assert_eq!(state["errors"][0]["errorType"], "orderError");
    assert_eq!(
        state["errors"][0]["errorDescription"],
        "order `o1` failed: the kernel refused: off the map"
    );
}

#[test]
fn bad_orders_and_commands_are_rejected_and_change_nothing() {
    let mut b = bridge();
    let t = "uagv/v2/acme/r1/order";
    for (payload, code) in [
        (b"not json".to_vec(), "malformed"),
        (vec![b' '; MAX_ORDER_BYTES + 1], "too_large"),
        (order("o1", 0, &[("nowhere", None)]), ""),
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
