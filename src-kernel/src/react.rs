//! The inner loop (seed 003 R1–R8) as data: the per-task [`ReactState`] and
//! the [`PlanStep`]s it walks, the [`Observation`] a brain sees, the
//! [`Decision`] it returns, the world's check of what a decision claims
//! ([`claims`]), the guardrails that judge its ops, the loop guards, and
//! [`step::step`], the loop's transitions as one pure function.
//! The engine drives it; nothing in here does IO.

pub mod claims;
pub mod decision;
pub mod guardrails;
pub mod guards;
pub mod observation;
pub mod progress;
pub mod step;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::protocol::Op;

pub use decision::{BrainError, Decision, PlanPatch};
pub use observation::{LastResult, Observation};
pub use progress::ProgressTracker;

/// Where a task's inner loop stands.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// An iteration (R1–R6) should run now.
    #[default]
    Ready,
    /// A step's skill is running (R7 observes it).
    Running {
        /// The goal.
        goal_id: String,
    },
    /// Doing nothing until a time, then deciding again.
    Waiting {
        /// Sim time the wait began.
        since: f64,
        /// Sim time to decide again.
        until: f64,
    },
    /// The brain is thinking (R2 pending); the observation it was given.
    Deciding {
        /// What the brain was shown.
        observation: Box<Observation>,
        /// The goal carrying the task's step while the brain thinks (its
        /// end is the step's end, recorded for the decision after this one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_goal: Option<String>,
    },
    /// An op waits for the operator (R5).
    AwaitingApproval {
        /// The approval.
        approval_id: String,
    },
    /// Not looping: paused, preempted, waiting for help, or finished.
    Halted,
}

/// A task's inner-loop state (part of the task, so it survives preemption).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReactState {
    /// Where the loop stands.
    pub phase: Phase,
    /// Iterations so far.
    pub iteration: u32,
    /// What the last observed result was (consumed by the next observation).
    pub last: Option<LastResult>,
    /// Progress of the running step.
    pub progress: ProgressTracker,
    /// Sim time of the next progress check while a step runs.
    pub next_check: f64,
    /// The brain's claims the world contradicted in a row
    /// ([`claims`]); at [`step::CONTRADICTIONS_BEFORE_RULES`] the rule brain
    /// decides the next turn.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub contradicted: u32,
    /// Ops the operator approved while the task was set aside: dispatched
    /// when it runs again, without asking twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved: Vec<Op>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One step of a plan: a skill call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    /// Skill name.
    pub skill: String,
    /// Its arguments.
    pub args: Value,
}

impl PlanStep {
    /// `watch`.
    pub fn watch() -> Self {
        Self {
            skill: "watch".into(),
            args: json!({}),
        }
    }

    /// `navigate_to {zone}`.
    pub fn navigate(zone: &str) -> Self {
        Self {
            skill: "navigate_to".into(),
            args: json!({ "zone": zone }),
        }
    }
}
