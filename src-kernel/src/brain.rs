//! Decision providers behind one trait. [`RuleBrain`] is deterministic,
//! offline, the embedded default and the fallback for every other brain;
//! [`LlmBrain`] asks an OpenAI-compatible model and falls back to the rule
//! brain when the model fails; [`ScriptedBrain`] plays decisions a scenario
//! lists. Intent recognition (utterance → intent) lives beside them in
//! [`intent`]. [`from_config`] picks the brain a run uses.

pub mod intent;
pub mod llm;
pub mod rule;
pub mod scripted;

use std::sync::Arc;
use std::time::Duration;

use crate::protocol::{BrainKind, EventKind};
use crate::react::{Decision, Observation};
use crate::skills::SkillRegistry;
use crate::world::World;

pub use intent::{Intent, parse_intent};
pub use llm::LlmBrain;
pub use rule::RuleBrain;
pub use scripted::ScriptedBrain;

use crate::config::Config;

/// Why a brain could not decide (it lives beside the decision it stands in for,
/// so the ReAct step takes a brain's answer without importing the brains).
pub use crate::react::BrainError;

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

    /// Starts understanding an utterance the local rule parser could not
    /// (model intent recognition). `false`: this brain does not try, and the
    /// rule parser's answer stands. `true`: the answer comes later from
    /// [`Brain::recognized`]; the kernel goes on meanwhile (an E-stop is
    /// never stuck behind a model call).
    fn recognize(&mut self, utterance: &str, world: &World, registry: &SkillRegistry) -> bool {
        let _ = (utterance, world, registry);
        false
    }

    /// Utterances whose recognition ended: `(utterance, intent)`, `None` when
    /// the model did not understand it either.
    fn recognized(
        &mut self,
        world: &World,
        registry: &SkillRegistry,
    ) -> Vec<(String, Option<Intent>)> {
        let _ = (world, registry);
        Vec::new()
    }

    /// Whether an utterance is being recognised.
    fn is_recognizing(&self) -> bool {
        false
    }

    /// Moves what the brain has to say outside a decision (model calls made
    /// for intent recognition, notices) into `events`.
    fn take_events(&mut self, events: &mut Vec<EventKind>) {
        let _ = events;
    }

    /// Gives the brain the run's memory, whose context it may put into its
    /// input (the model brain does; the others ignore it).
    fn use_memory(&mut self, memory: crate::memory::MemoryHandle) {
        let _ = memory;
    }

    /// Notified when a pending decision has news (a token, the answer), so
    /// an async driver can poll at once rather than at its next tick.
    fn waker(&self) -> Option<Arc<tokio::sync::Notify>> {
        None
    }

    /// Blocks until a pending decision has news or `timeout` passes (for
    /// lockstep drivers that must not advance time while the brain thinks).
    fn wait(&mut self, timeout: Duration) {
        let _ = timeout;
    }
}

/// The brain `config` asks for: the model brain when an endpoint is
/// configured (a base URL or an API key), else the rule brain. The second
/// value says, in words, which and why (for the console and the log).
pub fn from_config(config: &Config) -> Result<(Box<dyn Brain>, String), BrainError> {
    if !config.llm.is_configured() {
        return Ok((
            Box::new(RuleBrain::new()),
            "no model configured (OPENAI_BASE_URL / OPENAI_API_KEY unset): the rule brain decides, offline".into(),
        ));
    }
    let brain = LlmBrain::new(&config.llm)?;
    let why = format!(
        "model brain: {} at {} (the rule brain stands in when it fails)",
        config.llm.decision_model,
        config.llm.effective_base_url()
    );
    Ok((Box::new(brain), why))
}
