//! MCP calls driven through a whole engine: one call's events adding up to
//! its outcome (`mcp::call`), a configured service's tool as a skill
//! (`mcp::remote`). MCP lives in `robobrain-mcp`, below the engine; its
//! tests that need one run here.

mod call {
    use crate::protocol::{Door, Origin};
    use serde_json::json;

    use crate::config::Config;
    use crate::engine::Engine;
    use crate::mcp::call::*;
    use crate::protocol::{ApprovalStatus, EventKind, Op, SkillStatus, TaskStatus};
    use crate::protocol::{Command, Event};
    use crate::world::World;
    use serde_json::Value;

    /// Runs the simulated engine until `until` sim seconds, submitting `commands` at t = 0.
    fn run(engine: &mut Engine, commands: Vec<Command>, until: f64) -> Vec<Event> {
        for c in commands {
            engine.submit(c, Origin::new(Door::Mcp, "test"));
        }
        let mut events = Vec::new();
        while engine.time() < until {
            engine.tick(&mut events);
        }
        events
    }

    fn engine() -> Engine {
        let config = Config {
            thread_id: Some("test".into()),
            ..Config::default()
        };
        Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap()
    }

    fn call(id: &str, skill: &str, args: Value) -> Command {
        Command::Call {
            call_id: id.into(),
            skill: skill.into(),
            args,
        }
    }

    fn outcome(watch: &mut CallWatch, events: &[Event]) -> Option<CallOutcome> {
        events.iter().find_map(|e| watch.on_event(&e.kind))
    }

    #[test]
    fn an_instant_skill_call_succeeds_once_with_its_output() {
        let mut engine = engine();
        let args = json!({"text": "hello"});
        let events = run(&mut engine, vec![call("c1", "speak", args.clone())], 10.0);
        let mut watch = CallWatch::new("c1", "speak", &args);
        let out = outcome(&mut watch, &events);
        assert_eq!(
            out,
            Some(CallOutcome::Succeeded {
                task_id: "t1".into(),
                output: Some(json!({"spoken": "hello"})),
            })
        );
        let spoken = events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Speech { text, .. } if text == "hello"))
            .count();
        assert_eq!(spoken, 1, "the call ran more than once");
        assert!(engine.is_settled());
    }

    #[test]
    fn a_call_into_a_restricted_zone_waits_for_the_operator_then_runs_once() {
        let mut engine = engine();
        let args = json!({"zone": "study"});
        let events = run(
            &mut engine,
            vec![call("c1", "navigate_to", args.clone())],
            3.0,
        );
        let mut watch = CallWatch::new("c1", "navigate_to", &args);
        let Some(CallOutcome::ConfirmationRequired { approval_id, .. }) =
            outcome(&mut watch, &events)
        else {
            panic!("no confirmation asked for");
        };
        assert!(
            !events.iter().any(|e| matches!(
                &e.kind,
                EventKind::Skill { skill, .. } if skill == "navigate_to"
            )),
            "it ran before the approval"
        );
        let mut after = CallWatch::new("c1", "navigate_to", &args);
        let events2 = run(&mut engine, vec![Command::Approve { approval_id }], 200.0);
        let all: Vec<Event> = events.into_iter().chain(events2).collect();
        let outcomes: Vec<CallOutcome> =
            all.iter().filter_map(|e| after.on_event(&e.kind)).collect();
        assert!(
            matches!(outcomes.last(), Some(CallOutcome::Succeeded { .. })),
            "{outcomes:?}"
        );
        let dispatched = all
            .iter()
            .filter(|e| matches!(
                &e.kind,
                EventKind::Skill { skill, status: SkillStatus::Dispatched, .. } if skill == "navigate_to"
            ))
            .count();
        assert_eq!(dispatched, 1);
        assert_eq!(engine.state().telemetry.zone.as_deref(), Some("study"));
    }

    #[test]
    fn a_rejected_call_fails_with_the_reason() {
        let mut engine = engine();
        let args = json!({"zone": "study"});
        let mut events = run(
            &mut engine,
            vec![call("c9", "navigate_to", args.clone())],
            3.0,
        );
        events.extend(run(
            &mut engine,
            vec![Command::Reject {
                approval_id: "a1".into(),
                reason: "not now".into(),
            }],
            6.0,
        ));
        let mut watch = CallWatch::new("c9", "navigate_to", &args);
        let outcomes: Vec<CallOutcome> = events
            .iter()
            .filter_map(|e| watch.on_event(&e.kind))
            .collect();
        match outcomes.last() {
            Some(CallOutcome::Failed {
                task_status,
                message,
                ..
            }) => {
                assert_eq!(*task_status, TaskStatus::Aborted);
                assert!(message.starts_with("rejected: not now"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// A second call that needs approval used to set the first call's task
    /// aside and withdraw its approval: each pending approval now stays
    /// until the operator answers it, and each runs once approved.
    #[test]
    fn two_gated_calls_keep_both_approvals_until_answered_and_both_run() {
        let mut engine = engine();
        let mut events = run(
            &mut engine,
            vec![call("c1", "navigate_to", json!({"zone": "study"}))],
            3.0,
        );
        events.extend(run(
            &mut engine,
            vec![call("c2", "navigate_to", json!({"zone": "outside"}))],
            8.0,
        ));
        let pending: Vec<(String, Value)> = engine
            .state()
            .approvals
            .iter()
            .map(|a| match &a.op {
                Op::Dispatch { args, .. } => (a.id.clone(), args["zone"].clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            pending,
            vec![
                ("a1".to_string(), json!("study")),
                ("a2".to_string(), json!("outside"))
            ],
            "{events:#?}"
        );
        assert!(
            !events.iter().any(|e| matches!(
                &e.kind,
                EventKind::Approval {
                    status: ApprovalStatus::Rejected,
                    ..
                }
            )),
            "an approval was withdrawn"
        );
        // The first is approved while the second's task runs ahead of it:
        // it waits its turn, then runs without being asked again.
        events.extend(run(
            &mut engine,
            vec![Command::Approve {
                approval_id: "a1".into(),
            }],
            12.0,
        ));
        assert_eq!(engine.state().approvals.len(), 1);
        events.extend(run(
            &mut engine,
            vec![Command::Approve {
                approval_id: "a2".into(),
            }],
            400.0,
        ));
        let dispatched: Vec<Value> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Skill {
                    skill,
                    status: SkillStatus::Dispatched,
                    args,
                    ..
                } if skill == "navigate_to" => Some(args["zone"].clone()),
                _ => None,
            })
            .collect();
        assert_eq!(dispatched, vec![json!("outside"), json!("study")]);
        let requested = events
            .iter()
            .filter(|e| {
                matches!(
                    &e.kind,
                    EventKind::Approval {
                        status: ApprovalStatus::Requested,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(requested, 2, "an approval was asked for twice");
        assert_eq!(engine.state().telemetry.zone.as_deref(), Some("study"));
        for (c, zone) in [("c1", "study"), ("c2", "outside")] {
            let mut watch = CallWatch::new(c, "navigate_to", &json!({"zone": zone}));
            let last = events.iter().filter_map(|e| watch.on_event(&e.kind)).last();
            assert!(
                matches!(last, Some(CallOutcome::Succeeded { .. })),
                "{c}: {last:?}"
            );
        }
    }
}

mod remote {
    use crate::protocol::{Door, Origin};
    use serde_json::json;

    use crate::config::Config;
    use crate::config::McpServiceConfig;
    use crate::engine::Engine;
    use crate::mcp::remote::*;
    use crate::mcp::{CallOutcome, CallWatch};
    use crate::protocol::Risk;
    use crate::protocol::{Command, Event};
    use crate::skills::runner::GoalResult;
    use crate::skills::{MainType, SubType};
    use serde_json::Value;
    use std::sync::atomic::Ordering;

    fn service(risk: Option<Risk>) -> McpServiceConfig {
        McpServiceConfig {
            capabilities: vec!["home".into()],
            risk,
            ..McpServiceConfig::command("home", "home-mcp", &[])
        }
    }

    #[test]
    fn a_tool_becomes_a_namespaced_skill_with_its_risk() {
        let tool = json!({"name": "lights_off", "description": "Switch the lights off.",
            "inputSchema": {"type": "object", "properties": {"room": {"type": "string"}}}});
        let spec = remote_spec(&service(None), &tool);
        assert_eq!(spec.name, "mcp.home.lights_off");
        assert_eq!(
            (spec.risk, spec.sub_type),
            (Risk::LowWrite, SubType::Control)
        );
        assert_eq!(spec.main_type, MainType::Remote);
        assert_eq!(spec.capabilities, vec!["home".to_string()]);
        let read = json!({"name": "status", "annotations": {"readOnlyHint": true}});
        assert_eq!(remote_spec(&service(None), &read).risk, Risk::Read);
        assert_eq!(
            remote_spec(&service(Some(Risk::HighWrite)), &read).risk,
            Risk::HighWrite
        );
    }

    /// The engine runs a remote tool call: the worker (here, the test) gets
    /// the call, its end comes back through the skill, and the call succeeds
    /// once; while the service is down the call is refused.
    #[test]
    fn a_remote_call_goes_out_and_its_end_comes_back() {
        let config = Config {
            thread_id: Some("remote".into()),
            ..Config::default()
        };
        let mut engine =
            Engine::simulated(&config, crate::world::World::builtin("apartment").unwrap()).unwrap();
        let (port, mut worker) = service_channel("home");
        let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
        engine
            .registry_mut()
            .register(
                Box::new(RemoteTool::new(&service(None), &tool, port)),
                &Value::Null,
            )
            .unwrap();
        let args = json!({"say": "hi"});
        engine.submit(
            Command::Call {
                call_id: "c1".into(),
                skill: "mcp.home.echo".into(),
                args: args.clone(),
            },
            Origin::new(Door::Mcp, "test"),
        );
        let mut events: Vec<Event> = Vec::new();
        for _ in 0..5 {
            engine.tick(&mut events);
        }
        let call = worker.calls.try_recv().unwrap();
        assert_eq!((call.tool.as_str(), &call.args), ("echo", &args));
        worker
            .ends
            .send((
                call.goal_id,
                GoalResult::Succeeded {
                    output: json!({"echo": "hi"}),
                },
            ))
            .unwrap();
        for _ in 0..20 {
            engine.tick(&mut events);
        }
        let mut watch = CallWatch::new("c1", "mcp.home.echo", &args);
        let outcome = events.iter().find_map(|e| watch.on_event(&e.kind));
        assert!(
            matches!(&outcome, Some(CallOutcome::Succeeded { output: Some(o), .. }) if o["echo"] == "hi"),
            "{outcome:?}"
        );
        assert!(worker.calls.try_recv().is_err(), "called more than once");

        worker.up.store(false, Ordering::Release);
        engine.submit(
            Command::Call {
                call_id: "c2".into(),
                skill: "mcp.home.echo".into(),
                args: args.clone(),
            },
            Origin::new(Door::Mcp, "test"),
        );
        for _ in 0..20 {
            engine.tick(&mut events);
        }
        let mut watch = CallWatch::new("c2", "mcp.home.echo", &args);
        match events.iter().find_map(|e| watch.on_event(&e.kind)) {
            Some(CallOutcome::Failed { message, .. }) => {
                assert!(message.contains("`home` is unavailable"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(worker.calls.try_recv().is_err());
    }
}
