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
}

/// An observation of a one-step `goto kitchen` task, for unit tests.
#[cfg(test)]
pub(crate) fn sample() -> Observation {
    Observation {
        time: 10.0,
        task_id: "t1".into(),
        task_kind: "goto".into(),
        title: "go to kitchen".into(),
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
}
