//! Decision providers behind one trait. [`RuleBrain`] is deterministic,
//! offline, the embedded default and the fallback for every other brain.
//! Intent recognition (utterance → intent) lives beside it in [`intent`].

pub mod intent;
pub mod rule;

use thiserror::Error;

use crate::protocol::{BrainKind, EventKind};
use crate::react::{Decision, Observation};
use crate::sim::World;
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

/// A brain's answer, now or later.
#[derive(Debug, Clone, PartialEq)]
pub enum Thinking {
    /// The decision, and which brain made it (a model brain may answer
    /// with [`BrainKind::Fallback`] when its rule brain stood in).
    Done(Result<(Decision, BrainKind), BrainError>),
    /// Still thinking: the engine polls again next tick, and the robot goes on meanwhile.
    Pending,
}

/// Something that turns an observation into a decision (seed 003 R2).
pub trait Brain: Send {
    /// Which kind of brain this is.
    fn kind(&self) -> BrainKind;

    /// Starts a decision. `registry` lists the skills it may use. A brain
    /// that answers at once returns [`Thinking::Done`].
    fn decide(&mut self, observation: &Observation, registry: &SkillRegistry) -> Thinking;

    /// Checks on a pending decision, appending what happened meanwhile
    /// (streamed tokens, usage) to `events`.
    fn poll(&mut self, events: &mut Vec<EventKind>) -> Thinking {
        let _ = events;
        Thinking::Done(Err(BrainError::Unavailable(
            "no decision is pending".into(),
        )))
    }

    /// Understands an utterance the local rule parser could not (model intent
    /// recognition); `None` keeps the rule parser's answer.
    fn recognize(
        &mut self,
        utterance: &str,
        world: &World,
        registry: &SkillRegistry,
    ) -> Option<Intent> {
        let _ = (utterance, world, registry);
        None
    }
}
