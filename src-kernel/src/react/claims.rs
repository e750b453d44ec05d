//! A brain's word checked against the world. Models are untrusted: a
//! decision's type claims an outcome — FINISH that the task is done, ABORT
//! that it cannot be, SWITCH_TASK that another task waits, RETRY that the
//! step failed, CONTINUE that it goes on, a plan patch that the step cannot
//! be done — and the kernel believes none of it without the world's
//! evidence: the task's success criteria (every step of its plan succeeded;
//! a `goto` ends in its zone; a charge ends at the resume threshold), the
//! robot's pose and what the skills reported. Pure: the observation is what
//! the world says, the answer is why it contradicts the claim, if it does.
//! ASK_HUMAN claims nothing but that help is wanted, and is never refused.

use crate::protocol::DecisionType;
use crate::react::{Decision, LastResult, Observation};

/// Why the world contradicts what `decision` claims, if it does.
pub fn contradiction(decision: &Decision, obs: &Observation) -> Option<String> {
    let skip = decision.plan_patch.as_ref().is_some_and(|p| p.skip_current);
    if skip && let Some(why) = unfounded_skip(obs) {
        return Some(why);
    }
    let kind = decision.decision_type.as_str();
    match decision.decision_type {
        DecisionType::Finish => unfinished(obs, skip).map(|why| format!("{kind}, but {why}")),
        DecisionType::Abort => (!in_trouble(obs)).then(|| {
            format!(
                "{kind}, but nothing has failed: {} can still be done",
                obs.title
            )
        }),
        DecisionType::SwitchTask => obs
            .preempt
            .is_none()
            .then(|| format!("{kind}, but no other task waits to run")),
        DecisionType::Retry => (!obs.running.is_empty() && !in_trouble(obs)).then(|| {
            format!(
                "{kind}, but {} is still running and nothing has failed",
                running_skill(obs)
            )
        }),
        DecisionType::Continue if decision.ops.is_empty() => {
            stalled(obs, skip).map(|why| format!("{kind} with nothing to do, but {why}"))
        }
        DecisionType::Continue | DecisionType::Replan | DecisionType::AskHuman => None,
    }
}

/// Evidence that the current step cannot be done as it stands: a failure of
/// its skill, no progress, a result that went wrong, an incident in view.
fn in_trouble(obs: &Observation) -> bool {
    obs.failures > 0
        || obs.no_progress.is_some()
        || !obs.incidents.is_empty()
        || matches!(
            obs.last_result,
            Some(
                LastResult::Failed { .. }
                    | LastResult::Cancelled { .. }
                    | LastResult::GuardrailRejected { .. }
                    | LastResult::OperatorRejected { .. }
            )
        )
}

/// Why skipping the current step has no ground, if it has none.
fn unfounded_skip(obs: &Observation) -> Option<String> {
    let step = obs.current_step()?;
    (!in_trouble(obs)).then(|| {
        format!(
            "a skip of step {}/{} ({}), but nothing has failed",
            obs.step + 1,
            obs.plan_len,
            step.skill
        )
    })
}

/// Why the task is not done, if it is not (`skip`: the decision skips the
/// current step, on ground already checked).
fn unfinished(obs: &Observation, skip: bool) -> Option<String> {
    let skipped = usize::from(skip);
    let left = obs
        .plan_len
        .saturating_sub(obs.step)
        .saturating_sub(skipped);
    if left > 0 {
        let what = obs
            .plan
            .get(skipped)
            .map_or_else(String::new, |s| format!(" ({} {})", s.skill, s.args));
        return Some(format!(
            "step {}/{}{what} has not succeeded",
            obs.step + skipped + 1,
            obs.plan_len
        ));
    }
    if let Some(goal) = &obs.goal_zone
        && obs.zone.as_ref() != Some(goal)
    {
        let at = obs.zone.as_deref().unwrap_or("no known zone");
        return Some(format!("the robot is in {at}, not in {goal}"));
    }
    (obs.task_kind == "charge" && obs.battery_pct < obs.battery_resume_pct).then(|| {
        format!(
            "the battery is at {:.0}% and charging ends at {:.0}%",
            obs.battery_pct, obs.battery_resume_pct
        )
    })
}

/// Why the task does not go on by itself, if it does not.
fn stalled(obs: &Observation, skip: bool) -> Option<String> {
    if let Some(evidence) = &obs.no_progress {
        return Some(format!("the step makes no progress ({evidence})"));
    }
    let step_left = obs.current_step().is_some() && !(skip && obs.on_last_step());
    (obs.running.is_empty() && step_left)
        .then(|| "nothing of this task runs and the plan is not done".to_string())
}

fn running_skill(obs: &Observation) -> &str {
    obs.running.first().map_or("the step", |g| g.skill.as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::link::Incident;
    use crate::protocol::Op;
    use crate::react::PlanPatch;
    use crate::react::observation::{PreemptObs, RunningGoalObs, sample};

    fn says(kind: DecisionType) -> Decision {
        Decision::new(kind, "trust me")
    }

    /// What the world says to a bare claim of `kind`.
    fn claim(kind: DecisionType, obs: &Observation) -> Option<String> {
        contradiction(&says(kind), obs)
    }

    /// The sample `goto kitchen`, at its start in the hall.
    fn at_start() -> Observation {
        let mut obs = sample();
        obs.goal_zone = Some("kitchen".into());
        obs
    }

    /// The same task after its one step succeeded, the robot where `zone` says.
    fn arrived(zone: &str) -> Observation {
        let mut obs = at_start();
        obs.plan.clear();
        obs.step = 1;
        obs.zone = Some(zone.into());
        obs.last_result = Some(LastResult::Succeeded {
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
        });
        obs
    }

    fn failed() -> Observation {
        let mut obs = at_start();
        obs.failures = 1;
        obs.last_result = Some(LastResult::Failed {
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
            code: "no_path".into(),
            message: "blocked".into(),
        });
        obs
    }

    fn running(mut obs: Observation) -> Observation {
        obs.running.push(RunningGoalObs {
            goal_id: "g1".into(),
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
            feedback: None,
        });
        obs
    }

    #[test]
    fn finish_needs_every_step_done_and_the_robot_in_its_zone() {
        assert_eq!(
            claim(DecisionType::Finish, &at_start()).unwrap(),
            "FINISH, but step 1/1 (navigate_to {\"zone\":\"kitchen\"}) has not succeeded"
        );
        assert_eq!(
            claim(DecisionType::Finish, &arrived("hall")).unwrap(),
            "FINISH, but the robot is in hall, not in kitchen"
        );
        assert_eq!(claim(DecisionType::Finish, &arrived("kitchen")), None);
        // A patrol's plan has no zone to end in: its steps decide.
        let mut patrol = arrived("bedroom");
        patrol.goal_zone = None;
        assert_eq!(claim(DecisionType::Finish, &patrol), None);
    }

    #[test]
    fn finish_may_skip_a_last_step_that_failed_but_not_one_that_did_not() {
        let skip = PlanPatch { skip_current: true };
        let mut look = failed();
        look.goal_zone = None;
        look.plan = vec![crate::react::PlanStep::watch()];
        let finish = says(DecisionType::Finish).with_patch(skip.clone());
        assert_eq!(contradiction(&finish, &look), None);
        let mut fine = look;
        fine.failures = 0;
        fine.last_result = None;
        assert_eq!(
            contradiction(&finish, &fine).unwrap(),
            "a skip of step 1/1 (watch), but nothing has failed"
        );
        // A goto's skipped step still leaves the robot where it is.
        let gave_up = says(DecisionType::Finish).with_patch(skip);
        assert_eq!(
            contradiction(&gave_up, &failed()).unwrap(),
            "FINISH, but the robot is in hall, not in kitchen"
        );
    }

    #[test]
    fn a_charge_finishes_at_the_resume_threshold() {
        let mut obs = arrived("dock");
        obs.goal_zone = None;
        obs.task_kind = "charge".into();
        obs.battery_pct = 40.0;
        assert_eq!(
            claim(DecisionType::Finish, &obs).unwrap(),
            "FINISH, but the battery is at 40% and charging ends at 80%"
        );
        obs.battery_pct = 80.0;
        assert_eq!(claim(DecisionType::Finish, &obs), None);
    }

    #[test]
    fn abort_needs_something_to_have_gone_wrong() {
        let mut stuck = at_start();
        stuck.no_progress = Some("no feedback for 8 s".into());
        let mut fire = at_start();
        fire.incidents.push(Incident {
            zone: "kitchen".into(),
            kind: "fire".into(),
        });
        for grounds in [failed(), stuck, fire] {
            assert_eq!(claim(DecisionType::Abort, &grounds), None);
        }
        let groundless = claim(DecisionType::Abort, &at_start());
        assert_eq!(
            groundless.as_deref(),
            Some("ABORT, but nothing has failed: go to kitchen can still be done")
        );
    }

    #[test]
    fn switch_task_needs_a_task_that_waits() {
        assert_eq!(
            claim(DecisionType::SwitchTask, &at_start()).unwrap(),
            "SWITCH_TASK, but no other task waits to run"
        );
        let mut obs = at_start();
        obs.preempt = Some(PreemptObs {
            task_id: "t2".into(),
            title: "charge".into(),
            reason: "priority".into(),
        });
        assert_eq!(claim(DecisionType::SwitchTask, &obs), None);
    }

    #[test]
    fn retry_needs_a_step_that_failed_or_stopped() {
        assert_eq!(
            claim(DecisionType::Retry, &running(at_start())).unwrap(),
            "RETRY, but navigate_to is still running and nothing has failed"
        );
        assert_eq!(claim(DecisionType::Retry, &failed()), None);
        assert_eq!(claim(DecisionType::Retry, &at_start()), None);
    }

    #[test]
    fn continue_with_nothing_to_do_needs_a_step_that_goes_on() {
        assert_eq!(
            claim(DecisionType::Continue, &at_start()).unwrap(),
            "CONTINUE with nothing to do, but nothing of this task runs and the plan is not done"
        );
        assert_eq!(claim(DecisionType::Continue, &running(at_start())), None);
        let mut stuck = running(at_start());
        stuck.no_progress = Some("no feedback for 8 s".into());
        assert_eq!(
            claim(DecisionType::Continue, &stuck).unwrap(),
            "CONTINUE with nothing to do, but the step makes no progress (no feedback for 8 s)"
        );
        // With ops it starts something: the guardrails judge those.
        let go = says(DecisionType::Continue).with_ops([Op::Wait { seconds: 3.0 }]);
        assert_eq!(contradiction(&go, &at_start()), None);
    }

    #[test]
    fn a_replan_may_not_skip_a_step_that_did_not_fail_and_asking_is_always_allowed() {
        let skip = says(DecisionType::Replan).with_patch(PlanPatch { skip_current: true });
        assert_eq!(
            contradiction(&skip, &at_start()).unwrap(),
            "a skip of step 1/1 (navigate_to), but nothing has failed"
        );
        assert_eq!(contradiction(&skip, &failed()), None);
        assert_eq!(claim(DecisionType::Replan, &at_start()), None);
        for obs in [at_start(), failed(), arrived("hall")] {
            assert_eq!(claim(DecisionType::AskHuman, &obs), None);
        }
    }
}
