//! The rule brain: deterministic decisions from the observation, offline.
//! It is the embedded default and the fallback whenever a model fails.

use serde_json::json;

use super::{Brain, Thinking};
use crate::protocol::{BrainKind, DecisionType, Op};
use crate::react::{Decision, LastResult, Observation, PlanPatch};
use crate::skills::{Recovery, SkillRegistry};

/// Consecutive `no_path` failures after which a patrol skips the waypoint.
const SKIP_AFTER_NO_PATH: u32 = 2;
/// Sim seconds between decisions while charging.
const CHARGE_CHECK_S: f64 = 10.0;

/// Deterministic decisions (seed 003 §11 behaviours).
#[derive(Debug, Clone, Default)]
pub struct RuleBrain;

impl RuleBrain {
    /// A rule brain.
    pub fn new() -> Self {
        Self
    }
}

impl Brain for RuleBrain {
    fn kind(&self) -> BrainKind {
        BrainKind::Rule
    }

    fn decide(&mut self, obs: &Observation, registry: &SkillRegistry) -> Thinking {
        Thinking::Done(Ok((decide(obs, registry), BrainKind::Rule)))
    }
}

fn cancel_running(obs: &Observation) -> Vec<Op> {
    obs.running
        .iter()
        .map(|g| Op::Cancel {
            goal_id: g.goal_id.clone(),
        })
        .collect()
}

fn dispatch_current(obs: &Observation) -> Vec<Op> {
    obs.current_step()
        .map(|s| Op::Dispatch {
            skill: s.skill.clone(),
            args: s.args.clone(),
        })
        .into_iter()
        .collect()
}

fn describe_step(obs: &Observation) -> String {
    match obs.current_step() {
        Some(s) => format!(
            "step {}/{}: {}",
            obs.step + 1,
            obs.plan_len,
            describe_call(&s.skill, &s.args)
        ),
        None => "no step left".into(),
    }
}

/// `navigate_to kitchen`, `dock`, or the skill with its JSON args.
fn describe_call(skill: &str, args: &serde_json::Value) -> String {
    match args.as_object() {
        Some(o) if o.is_empty() => skill.to_string(),
        Some(o) if o.len() == 1 && o.contains_key("zone") => format!("{skill} {}", target_of(args)),
        _ => format!("{skill} {args}"),
    }
}

fn target_of(args: &serde_json::Value) -> String {
    args.get("zone")
        .and_then(|z| z.as_str())
        .map_or_else(|| args.to_string(), str::to_string)
}

/// The rule brain's decision for `obs`.
pub fn decide(obs: &Observation, registry: &SkillRegistry) -> Decision {
    use DecisionType as D;
    if let Some(p) = &obs.preempt {
        return Decision::new(
            D::SwitchTask,
            format!(
                "{} ({}) outranks {}: {}",
                p.task_id, p.title, obs.task_id, p.reason
            ),
        )
        .with_ops(cancel_running(obs));
    }
    match &obs.last_result {
        Some(LastResult::OperatorRejected { reason, .. }) => {
            let why = if reason.is_empty() {
                "no reason given".to_string()
            } else {
                reason.clone()
            };
            return Decision::new(
                D::Abort,
                format!("the operator rejected the step ({why}): give the task up"),
            )
            .with_ops(cancel_running(obs));
        }
        Some(LastResult::GuardrailRejected { reason, .. }) => {
            return Decision::new(
                D::AskHuman,
                format!("the guardrails refused the step: {reason}"),
            );
        }
        _ => {}
    }
    if obs.task_kind == "charge" && obs.current_step().is_none() {
        return charging(obs);
    }
    if !obs.running.is_empty()
        && !matches!(
            obs.last_result,
            Some(LastResult::Succeeded { .. } | LastResult::Failed { .. })
        )
    {
        return progress_check(obs);
    }
    match &obs.last_result {
        None => start(obs, D::Continue, "start"),
        Some(LastResult::Resumed { after }) => {
            start(obs, D::Continue, &format!("resume after {after}:"))
        }
        Some(LastResult::Contradicted { reason, .. }) => start(
            obs,
            D::Continue,
            &format!("the world says otherwise ({reason});"),
        ),
        Some(LastResult::Succeeded { skill, .. })
            if skill == "watch"
                && let Some(d) = emergency(obs) =>
        {
            d
        }
        Some(LastResult::Succeeded { skill, args }) => {
            let done = format!("{} succeeded", describe_call(skill, args));
            if obs.current_step().is_none() {
                Decision::new(D::Finish, format!("{done}; {} is done", obs.title))
                    .with_ops([speak(&finish_line(obs))])
            } else {
                Decision::new(D::Continue, format!("{done}; next {}", describe_step(obs)))
                    .with_ops(dispatch_current(obs))
            }
        }
        Some(LastResult::Failed {
            skill,
            args,
            code,
            message,
        }) => failed(obs, registry, skill, args, code, message),
        Some(LastResult::Cancelled { skill }) => {
            Decision::new(D::Retry, format!("{skill} was cancelled; start it again"))
                .with_ops(dispatch_current(obs))
        }
        Some(LastResult::Waited { seconds }) => Decision::new(
            D::Retry,
            format!("waited {seconds:.0} s; try {} again", describe_step(obs)),
        )
        .with_ops(dispatch_current(obs)),
        Some(LastResult::OperatorRejected { .. } | LastResult::GuardrailRejected { .. }) => {
            Decision::new(D::AskHuman, "unexpected state".to_string())
        }
    }
}

fn start(obs: &Observation, t: DecisionType, prefix: &str) -> Decision {
    if obs.current_step().is_none() {
        return Decision::new(
            DecisionType::Finish,
            format!("nothing left to do for {}", obs.title),
        );
    }
    Decision::new(t, format!("{prefix} {}", describe_step(obs))).with_ops(dispatch_current(obs))
}

fn progress_check(obs: &Observation) -> Decision {
    if let Some(evidence) = &obs.no_progress {
        let mut ops = cancel_running(obs);
        ops.extend(dispatch_current(obs));
        return Decision::new(
            DecisionType::Replan,
            format!("no progress ({evidence}): cancel and plan again"),
        )
        .with_ops(ops);
    }
    let goal = &obs.running[0];
    let detail = goal.feedback.as_ref().map_or_else(
        || "waiting for feedback".to_string(),
        |f| {
            format!(
                "{:.1} m to go, ETA {:.0} s",
                f.distance_remaining, f.estimated_time_remaining
            )
        },
    );
    Decision::new(
        DecisionType::Continue,
        format!(
            "{} in progress: {detail}",
            describe_call(&goal.skill, &goal.args)
        ),
    )
}

fn failed(
    obs: &Observation,
    registry: &SkillRegistry,
    skill: &str,
    args: &serde_json::Value,
    code: &str,
    message: &str,
) -> Decision {
    use DecisionType as D;
    let target = target_of(args);
    let recovery = registry
        .spec(skill)
        .and_then(|s| s.recovery_for(code))
        .unwrap_or(Recovery::AskHuman);
    match (recovery, code) {
        (Recovery::Replan, "blocked") => Decision::new(
            D::Replan,
            format!(
                "{skill} to {target} blocked ({message}); plan a new route around the obstruction"
            ),
        )
        .with_ops(dispatch_current(obs)),
        (Recovery::Replan, _) => {
            if obs.task_kind == "patrol"
                && !obs.on_last_step()
                && obs.failures >= SKIP_AFTER_NO_PATH
            {
                let next = obs.next_step().map(|s| Op::Dispatch {
                    skill: s.skill.clone(),
                    args: s.args.clone(),
                });
                return Decision::new(
                    D::Replan,
                    format!(
                        "{target} unreachable {} times ({code}); skip it and go on with the patrol",
                        obs.failures
                    ),
                )
                .with_patch(PlanPatch { skip_current: true })
                .with_ops(next);
            }
            Decision::new(
                D::Replan,
                format!(
                    "no way to {target} right now ({code}: {message}); wait {:.0} s for it to clear, then try again",
                    obs.replan_wait_s
                ),
            )
            .with_ops([Op::Wait { seconds: obs.replan_wait_s }])
        }
        (Recovery::Retry, _) => Decision::new(
            D::Retry,
            format!("{skill} to {target} failed ({code}); try again"),
        )
        .with_ops(dispatch_current(obs)),
        (Recovery::AskHuman, _) => Decision::new(
            D::AskHuman,
            format!("{skill} to {target} failed ({code}: {message}); I need help"),
        ),
        (Recovery::Skip, _) => {
            let reason = format!("{skill} failed ({code}: {message}); carry on without it");
            let skip = PlanPatch { skip_current: true };
            if obs.on_last_step() {
                Decision::new(D::Finish, reason).with_patch(skip)
            } else {
                let next = obs.next_step().map(|s| Op::Dispatch {
                    skill: s.skill.clone(),
                    args: s.args.clone(),
                });
                Decision::new(D::Continue, reason)
                    .with_patch(skip)
                    .with_ops(next)
            }
        }
    }
}

/// After a `watch` that saw an emergency: raise the alert, say so, and wait
/// for an operator (seed 000 §3.5: ALERT). `None` when all is normal.
fn emergency(obs: &Observation) -> Option<Decision> {
    let seen = obs.vision.as_ref()?;
    if seen.get("emergency").and_then(serde_json::Value::as_bool) != Some(true) {
        return None;
    }
    let kinds: Vec<String> = seen
        .get("objects_detected")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str())
                .filter(|k| crate::perception::vision::EMERGENCY_LABELS.contains(k))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let kinds = if kinds.is_empty() {
        vec!["emergency".to_string()]
    } else {
        kinds
    };
    let zone = seen
        .get("zone")
        .and_then(serde_json::Value::as_str)
        .or(obs.zone.as_deref())
        .unwrap_or("here")
        .to_string();
    let what = kinds.join(" and ");
    let description = seen
        .get("description")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let alert = Op::Dispatch {
        skill: "alert".into(),
        args: json!({
            "zone": zone,
            "kinds": kinds,
            "description": description,
            "evidence": seen.get("evidence").cloned().unwrap_or(serde_json::Value::Null),
            "vision": seen,
        }),
    };
    let warning = speak(&format!(
        "Warning: {what} in the {}! I have raised the alert.",
        zone.replace('_', " ")
    ));
    Some(
        Decision::new(
            DecisionType::AskHuman,
            format!(
                "{what} seen in {zone}: raise the alert and stay until an operator acknowledges"
            ),
        )
        .with_ops([alert, warning]),
    )
}

fn charging(obs: &Observation) -> Decision {
    if obs.battery_pct >= obs.battery_resume_pct {
        return Decision::new(
            DecisionType::Finish,
            format!(
                "battery at {:.0}% ≥ {:.0}%: charged enough",
                obs.battery_pct, obs.battery_resume_pct
            ),
        );
    }
    if !obs.charging {
        return Decision::new(
            DecisionType::Retry,
            "not charging although docked; dock again",
        )
        .with_ops([Op::Dispatch {
            skill: "dock".into(),
            args: json!({}),
        }]);
    }
    Decision::new(
        DecisionType::Continue,
        format!(
            "charging: {:.0}% of {:.0}%",
            obs.battery_pct, obs.battery_resume_pct
        ),
    )
    .with_ops([Op::Wait {
        seconds: CHARGE_CHECK_S,
    }])
}

fn speak(text: &str) -> Op {
    Op::Dispatch {
        skill: "speak".into(),
        args: json!({ "text": text }),
    }
}

fn finish_line(obs: &Observation) -> String {
    match obs.task_kind.as_str() {
        "goto" => format!(
            "I have arrived at the {}.",
            obs.zone
                .as_deref()
                .unwrap_or("destination")
                .replace('_', " ")
        ),
        "patrol" => "Patrol complete. All normal.".into(),
        _ => format!("Done: {}.", obs.title),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::PlanStep;
    use crate::react::observation::{PreemptObs, RunningGoalObs};

    fn obs(kind: &str, zones: &[&str], step: usize, last: Option<LastResult>) -> Observation {
        Observation {
            task_kind: kind.into(),
            title: "task".into(),
            plan: zones
                .iter()
                .skip(step)
                .map(|z| PlanStep::navigate(z))
                .collect(),
            step,
            plan_len: zones.len(),
            zone: Some("kitchen".into()),
            last_result: last,
            ..crate::react::observation::sample()
        }
    }

    #[allow(clippy::unnecessary_wraps)]
    fn failed(code: &str) -> Option<LastResult> {
        Some(LastResult::Failed {
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
            code: code.into(),
            message: "m".into(),
        })
    }

    fn registry() -> SkillRegistry {
        SkillRegistry::with_builtins().unwrap()
    }

    #[test]
    fn a_fresh_task_dispatches_its_first_step() {
        let d = decide(&obs("goto", &["kitchen"], 0, None), &registry());
        assert_eq!(d.decision_type, DecisionType::Continue);
        assert_eq!(
            d.ops,
            vec![Op::Dispatch {
                skill: "navigate_to".into(),
                args: json!({"zone": "kitchen"})
            }]
        );
    }

    #[test]
    fn success_on_the_last_step_finishes_and_says_so() {
        let last = Some(LastResult::Succeeded {
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
        });
        let d = decide(&obs("goto", &["kitchen"], 1, last.clone()), &registry());
        assert_eq!(d.decision_type, DecisionType::Finish);
        assert!(matches!(&d.ops[0], Op::Dispatch { skill, .. } if skill == "speak"));
        let d = decide(
            &obs("patrol", &["kitchen", "bedroom"], 1, last),
            &registry(),
        );
        assert_eq!(d.decision_type, DecisionType::Continue);
    }

    #[test]
    fn blocked_replans_and_no_path_waits_then_skips_on_patrol() {
        let d = decide(
            &obs("goto", &["kitchen"], 0, failed("blocked")),
            &registry(),
        );
        assert_eq!(d.decision_type, DecisionType::Replan);
        assert!(matches!(d.ops[0], Op::Dispatch { .. }));
        let d = decide(
            &obs("goto", &["kitchen"], 0, failed("no_path")),
            &registry(),
        );
        assert_eq!(d.decision_type, DecisionType::Replan);
        assert_eq!(d.ops, vec![Op::Wait { seconds: 3.0 }]);
        let mut o = obs("patrol", &["kitchen", "bedroom"], 0, failed("no_path"));
        o.failures = 2;
        let d = decide(&o, &registry());
        assert_eq!(d.plan_patch, Some(PlanPatch { skip_current: true }));
        assert_eq!(
            d.ops,
            vec![Op::Dispatch {
                skill: "navigate_to".into(),
                args: json!({"zone": "bedroom"})
            }]
        );
        let d = decide(
            &obs("goto", &["kitchen"], 0, failed("timeout")),
            &registry(),
        );
        assert_eq!(d.decision_type, DecisionType::Retry);
        let d = decide(
            &obs("goto", &["kitchen"], 0, failed("invalid_goal")),
            &registry(),
        );
        assert_eq!(d.decision_type, DecisionType::AskHuman);
    }

    #[test]
    fn no_progress_cancels_and_replans() {
        let mut o = obs("goto", &["kitchen"], 0, None);
        o.running = vec![RunningGoalObs {
            goal_id: "g1.0".into(),
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
            feedback: None,
        }];
        assert_eq!(
            decide(&o, &registry()).decision_type,
            DecisionType::Continue
        );
        o.no_progress = Some("stuck".into());
        let d = decide(&o, &registry());
        assert_eq!(d.decision_type, DecisionType::Replan);
        assert_eq!(
            d.ops[0],
            Op::Cancel {
                goal_id: "g1.0".into()
            }
        );
    }

    #[test]
    fn preemption_and_operator_rejection_come_first() {
        let mut o = obs("goto", &["kitchen"], 0, None);
        o.preempt = Some(PreemptObs {
            task_id: "t2".into(),
            title: "go to bedroom".into(),
            reason: "r".into(),
        });
        assert_eq!(
            decide(&o, &registry()).decision_type,
            DecisionType::SwitchTask
        );
        let last = Some(LastResult::OperatorRejected {
            op: Op::Wait { seconds: 1.0 },
            reason: "no".into(),
        });
        assert_eq!(
            decide(&obs("goto", &["outside"], 0, last), &registry()).decision_type,
            DecisionType::Abort
        );
    }

    #[test]
    fn charging_waits_until_the_resume_threshold() {
        let mut o = obs("charge", &[], 0, None);
        o.plan = Vec::new();
        o.plan_len = 1;
        o.step = 1;
        o.charging = true;
        assert_eq!(
            decide(&o, &registry()).decision_type,
            DecisionType::Continue
        );
        o.battery_pct = 80.0;
        assert_eq!(decide(&o, &registry()).decision_type, DecisionType::Finish);
    }
}
