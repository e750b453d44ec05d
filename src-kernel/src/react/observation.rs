//! What a brain sees (seed 003 R1): a compact, structured summary — never raw
//! sensor data — of the task, the robot and what just happened.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::link::{Incident, NavFeedback};
use crate::protocol::Op;
use crate::react::PlanStep;

/// What happened since the last decision (R7's record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum LastResult {
    /// The step's skill succeeded.
    Succeeded {
        /// Skill.
        skill: String,
        /// Its arguments.
        args: Value,
    },
    /// The step's skill failed.
    Failed {
        /// Skill.
        skill: String,
        /// Its arguments.
        args: Value,
        /// Error code.
        code: String,
        /// Detail.
        message: String,
    },
    /// The step's skill was cancelled from outside the loop.
    Cancelled {
        /// Skill.
        skill: String,
    },
    /// A wait ended.
    Waited {
        /// Seconds waited.
        seconds: f64,
    },
    /// The guardrails refused an op.
    GuardrailRejected {
        /// The op.
        op: Op,
        /// Why.
        reason: String,
    },
    /// The operator rejected an op.
    OperatorRejected {
        /// The op.
        op: Op,
        /// The operator's reason.
        reason: String,
    },
    /// The world contradicted what the brain's last decision claimed
    /// (`react::claims`): nothing of it was carried out.
    Contradicted {
        /// The decision type that claimed it (`FINISH`, …).
        claim: crate::protocol::DecisionType,
        /// What the world says instead.
        reason: String,
    },
    /// The task runs again after being set aside.
    Resumed {
        /// Why it had stopped.
        after: String,
    },
}

/// A running goal of this task, as the brain sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningGoalObs {
    /// Goal id (for cancel ops).
    pub goal_id: String,
    /// Skill.
    pub skill: String,
    /// Arguments.
    pub args: Value,
    /// Latest feedback.
    pub feedback: Option<NavFeedback>,
}

/// A higher-priority task waiting to take over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreemptObs {
    /// Its id.
    pub task_id: String,
    /// What it is.
    pub title: String,
    /// Why it outranks the active task.
    pub reason: String,
}

/// How many plan steps an observation shows, from the current one on.
pub const PLAN_WINDOW: usize = 8;

/// The observation (R1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Sim time.
    pub time: f64,
    /// Task id.
    pub task_id: String,
    /// Task kind (`goto`, `patrol`, `charge`).
    pub task_kind: String,
    /// Task in words.
    pub title: String,
    /// Where the task must end, when its success is a place (a `goto`'s
    /// zone): the robot there, not a brain's word, makes it done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_zone: Option<String>,
    /// The plan ahead: the step the task is on and at most
    /// [`PLAN_WINDOW`]` - 1` after it (a summary, like the rest: a long patrol
    /// does not grow every observation).
    pub plan: Vec<PlanStep>,
    /// Index of the step it is on (`plan[0]` when a step is left).
    pub step: usize,
    /// Number of steps in the whole plan.
    pub plan_len: usize,
    /// Iteration number of this decision.
    pub iteration: u32,
    /// Zone the robot is in.
    pub zone: Option<String>,
    /// Battery percent.
    pub battery_pct: f64,
    /// Whether it is charging.
    pub charging: bool,
    /// Battery percent at which charging is enough.
    pub battery_resume_pct: f64,
    /// Distance to the running base goal.
    pub distance_to_target: Option<f64>,
    /// This task's running goals.
    pub running: Vec<RunningGoalObs>,
    /// What happened since the last decision.
    pub last_result: Option<LastResult>,
    /// Consecutive failures of the current step's skill.
    pub failures: u32,
    /// Set when the running step makes no progress, with the evidence.
    pub no_progress: Option<String>,
    /// A higher-priority task waiting to take over.
    pub preempt: Option<PreemptObs>,
    /// Passages known to be blocked.
    pub blocked_passages: Vec<String>,
    /// Incidents in view.
    pub incidents: Vec<Incident>,
    /// Seconds to wait before retrying when no route exists.
    pub replan_wait_s: f64,
    /// The last `watch` result (shared data `last_vision_result`): what was
    /// seen, whether it is an emergency, where, and the evidence frame.
    #[serde(default)]
    pub vision: Option<Value>,
}

impl Observation {
    /// The step the task is on.
    pub fn current_step(&self) -> Option<&PlanStep> {
        self.plan.first()
    }

    /// The step after the current one.
    pub fn next_step(&self) -> Option<&PlanStep> {
        self.plan.get(1)
    }

    /// Whether the current step is the last.
    pub fn on_last_step(&self) -> bool {
        self.step + 1 >= self.plan_len
    }

    /// What changed between `earlier` and this observation of the same task
    /// that a decision about `earlier` may not fit — the plan moved on, a
    /// goal of the task started or ended, a new result came in, another
    /// task began to wait, the robot changed zone — or `None`.
    pub fn moved_since(&self, earlier: &Observation) -> Option<String> {
        let goals = |o: &Observation| -> Vec<String> {
            o.running.iter().map(|g| g.goal_id.clone()).collect()
        };
        if self.step != earlier.step {
            Some(format!(
                "the plan moved from step {} to step {}",
                earlier.step + 1,
                self.step + 1
            ))
        } else if goals(self) != goals(earlier) {
            Some("the task's running goals changed".into())
        } else if self.last_result != earlier.last_result {
            Some("a new result came in".into())
        } else if self.preempt != earlier.preempt {
            Some("another task waits to run".into())
        } else if self.zone != earlier.zone {
            let name = |z: &Option<String>| z.clone().unwrap_or_else(|| "nowhere known".into());
            Some(format!(
                "the robot went from {} to {}",
                name(&earlier.zone),
                name(&self.zone)
            ))
        } else {
            None
        }
    }
}

/// An observation of a one-step `goto kitchen` task, for unit tests.
#[cfg(test)]
pub(crate) fn sample() -> Observation {
    Observation {
        time: 10.0,
        task_id: "t1".into(),
        task_kind: "goto".into(),
        title: "go to kitchen".into(),
        goal_zone: None,
        plan: vec![PlanStep::navigate("kitchen")],
        step: 0,
        plan_len: 1,
        iteration: 1,
        zone: Some("hall".into()),
        battery_pct: 50.0,
        charging: false,
        battery_resume_pct: 80.0,
        distance_to_target: None,
        running: Vec::new(),
        last_result: None,
        failures: 0,
        no_progress: None,
        preempt: None,
        blocked_passages: Vec::new(),
        incidents: Vec::new(),
        replan_wait_s: 3.0,
        vision: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_step_is_the_plans_last() {
        let mut o = sample();
        o.plan_len = 3;
        for (step, last) in [(0, false), (1, false), (2, true)] {
            o.step = step;
            assert_eq!(o.on_last_step(), last, "step {step} of 3");
        }
        o.plan_len = 1;
        o.step = 0;
        assert!(o.on_last_step(), "a one-step plan's only step");
    }

    #[test]
    fn a_world_that_moved_says_how() {
        let asked = sample();
        let mut now = asked.clone();
        now.time = 30.0;
        now.distance_to_target = Some(1.0);
        assert_eq!(now.moved_since(&asked), None, "time alone is no move");
        now.zone = Some("kitchen".into());
        assert_eq!(
            now.moved_since(&asked).unwrap(),
            "the robot went from hall to kitchen"
        );
        now.last_result = Some(LastResult::Succeeded {
            skill: "navigate_to".into(),
            args: serde_json::json!({"zone": "kitchen"}),
        });
        assert_eq!(now.moved_since(&asked).unwrap(), "a new result came in");
        now.step = 1;
        assert_eq!(
            now.moved_since(&asked).unwrap(),
            "the plan moved from step 1 to step 2"
        );
    }
}
