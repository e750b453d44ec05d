//! One skill call from outside the brain (`Command::Call`), followed through
//! the events: the `task` event whose reason is `call <id>` names its task;
//! from then on the task's approvals, its skill goals and its end decide
//! the outcome the caller gets.

use serde::Serialize;
use serde_json::Value;

use crate::protocol::{ApprovalStatus, EventKind, Op, SkillStatus, TaskStatus, Verdict};

/// How a call turned out, as far as its caller is concerned.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The policy wants an operator: the call has not run and runs only
    /// once an operator approves `approval_id` (never the caller).
    ConfirmationRequired {
        /// The call's task.
        task_id: String,
        /// The pending approval.
        approval_id: String,
        /// Why the policy wants it.
        reason: String,
    },
    /// The skill ran and succeeded.
    Succeeded {
        /// The call's task.
        task_id: String,
        /// What the skill returned, if anything.
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
    },
    /// The call did not succeed: refused, failed, cancelled, or stuck waiting
    /// for the operator.
    Failed {
        /// The call's task.
        task_id: String,
        /// The task's status when the call gave up (`aborted`, `waiting_human`, …).
        task_status: TaskStatus,
        /// What went wrong, in words.
        message: String,
    },
}

/// Follows the events of one call until its outcome is known.
#[derive(Debug, Clone)]
pub struct CallWatch {
    call_id: String,
    skill: String,
    args: Value,
    task_id: Option<String>,
    goals: Vec<String>,
    output: Option<Value>,
    failure: Option<String>,
}

impl CallWatch {
    /// Watches call `call_id` of `skill` with `args` (as sent in `Command::Call`).
    pub fn new(call_id: &str, skill: &str, args: &Value) -> Self {
        Self {
            call_id: call_id.to_string(),
            skill: skill.to_string(),
            args: args.clone(),
            task_id: None,
            goals: Vec::new(),
            output: None,
            failure: None,
        }
    }

    /// The `task` event reason that queues call `call_id`.
    pub fn queued_reason(call_id: &str) -> String {
        format!("call {call_id}")
    }

    /// The call's task, once it is queued.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// Takes in one event; returns the outcome once it is known.
    pub fn on_event(&mut self, kind: &EventKind) -> Option<CallOutcome> {
        let Some(task_id) = self.task_id.clone() else {
            if let EventKind::Task { task, reason } = kind
                && *reason == Self::queued_reason(&self.call_id)
            {
                self.task_id = Some(task.id.clone());
            }
            return None;
        };
        match kind {
            EventKind::Approval {
                task_id: t,
                approval_id,
                status,
                op,
                reason,
                ..
            } if *t == task_id => match status {
                ApprovalStatus::Requested => {
                    return Some(CallOutcome::ConfirmationRequired {
                        task_id,
                        approval_id: approval_id.clone(),
                        reason: reason.clone(),
                    });
                }
                ApprovalStatus::Edited => {
                    if let Op::Dispatch { skill, args } = op
                        && *skill == self.skill
                    {
                        self.args = args.clone();
                    }
                }
                ApprovalStatus::Rejected => self.failure = Some(format!("rejected: {reason}")),
                ApprovalStatus::Approved | ApprovalStatus::EditRefused => {}
            },
            EventKind::Guardrail {
                task_id: t,
                verdict: Verdict::Rejected,
                reason,
                ..
            } if *t == task_id => {
                self.failure = Some(format!("refused by the guardrails: {reason}"));
            }
            EventKind::Skill {
                goal_id,
                skill,
                status,
                args,
                error,
                message,
                output,
                ..
            } => self.on_skill(
                goal_id,
                skill,
                *status,
                args,
                error.as_deref(),
                message,
                output.as_ref(),
            ),
            EventKind::Task { task, reason } if task.id == task_id => {
                return self.on_task_status(task_id, task.status, reason);
            }
            _ => {}
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn on_skill(
        &mut self,
        goal_id: &str,
        skill: &str,
        status: SkillStatus,
        args: &Value,
        error: Option<&str>,
        message: &str,
        output: Option<&Value>,
    ) {
        let mine = self.goals.iter().any(|g| g == goal_id);
        match status {
            SkillStatus::Dispatched if skill == self.skill && *args == self.args && !mine => {
                self.goals.push(goal_id.to_string());
            }
            SkillStatus::Succeeded if mine => self.output = output.cloned(),
            SkillStatus::Failed if mine || (skill == self.skill && *args == self.args) => {
                let code = error.unwrap_or("failed");
                self.failure = Some(if message.is_empty() {
                    format!("{skill} failed: {code}")
                } else {
                    format!("{skill} failed: {code} ({message})")
                });
            }
            _ => {}
        }
    }

    fn on_task_status(
        &mut self,
        task_id: String,
        status: TaskStatus,
        reason: &str,
    ) -> Option<CallOutcome> {
        match status {
            TaskStatus::Succeeded => Some(CallOutcome::Succeeded {
                task_id,
                output: self.output.take(),
            }),
            TaskStatus::Aborted | TaskStatus::Cancelled | TaskStatus::WaitingHuman => {
                let message = match &self.failure {
                    Some(f) => format!("{f}; {reason}"),
                    None => reason.to_string(),
                };
                Some(CallOutcome::Failed {
                    task_id,
                    task_status: status,
                    message,
                })
            }
            TaskStatus::Queued
            | TaskStatus::Running
            | TaskStatus::Preempted
            | TaskStatus::Paused => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::protocol::{Door, Origin};
    use serde_json::json;

    use super::*;
    use crate::config::Config;
    use crate::engine::Engine;
    use crate::protocol::{Command, Event};
    use crate::world::World;

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
