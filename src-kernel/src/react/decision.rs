//! The brain's structured decision (seed 003 R2).

use serde::{Deserialize, Serialize};

use crate::protocol::{DecisionType, Op};

/// A change to the task's plan.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanPatch {
    /// Skip the current step (for example an unreachable patrol waypoint).
    #[serde(default)]
    pub skip_current: bool,
}

/// What the brain decided and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The type.
    #[serde(rename = "type")]
    pub decision_type: DecisionType,
    /// Why, in words the operator reads.
    pub reason: String,
    /// A change to the plan, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_patch: Option<PlanPatch>,
    /// Ops to carry out (dispatch, cancel, wait).
    #[serde(default)]
    pub ops: Vec<Op>,
}

impl Decision {
    /// A decision with no ops.
    pub fn new(decision_type: DecisionType, reason: impl Into<String>) -> Self {
        Self {
            decision_type,
            reason: reason.into(),
            plan_patch: None,
            ops: Vec::new(),
        }
    }

    /// The same decision with `ops` added.
    pub fn with_ops(mut self, ops: impl IntoIterator<Item = Op>) -> Self {
        self.ops.extend(ops);
        self
    }

    /// The same decision with a plan patch.
    pub fn with_patch(mut self, patch: PlanPatch) -> Self {
        self.plan_patch = Some(patch);
        self
    }
}

/// Why a brain could not decide.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum BrainError {
    /// The brain's answer was unusable.
    #[error("invalid decision: {0}")]
    Invalid(String),
    /// The brain is not reachable.
    #[error("brain unavailable: {0}")]
    Unavailable(String),
}
