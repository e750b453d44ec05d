//! Decision providers behind one trait. [`RuleBrain`] is deterministic,
//! offline, the embedded default and the fallback for every other brain.
//! Intent recognition (utterance → intent) lives beside it in [`intent`].

pub mod intent;
pub mod rule;

use thiserror::Error;

use crate::protocol::BrainKind;
use crate::react::{Decision, Observation};
use crate::skills::SkillRegistry;

pub use intent::{Intent, parse_intent};
pub use rule::RuleBrain;

/// Why a brain could not decide.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum BrainError {
    /// The brain's answer was unusable.
    #[error("invalid decision: {0}")]
    Invalid(String),
    /// The brain is not reachable.
    #[error("brain unavailable: {0}")]
    Unavailable(String),
}

/// Something that turns an observation into a decision (seed 003 R2).
pub trait Brain: Send {
    /// Which kind of brain this is (shown in every decision event).
    fn kind(&self) -> BrainKind;

    /// Decides what to do next. `registry` lists the skills it may use.
    fn decide(
        &mut self,
        observation: &Observation,
        registry: &SkillRegistry,
    ) -> Result<Decision, BrainError>;
}
