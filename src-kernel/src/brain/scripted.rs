//! The scripted brain: decisions listed in a scenario (`[[decision]]`),
//! given in order, one per iteration — for tests that need a particular
//! decision at a particular turn. When the list runs out the rule brain
//! decides (and its decisions say `brain: rule`).

use std::collections::VecDeque;

use super::{Brain, Thinking, rule};
use crate::protocol::BrainKind;
use crate::react::{Decision, Observation};
use crate::skills::SkillRegistry;

/// Decisions given by a scenario.
#[derive(Debug, Clone, Default)]
pub struct ScriptedBrain {
    decisions: VecDeque<Decision>,
}

impl ScriptedBrain {
    /// A brain that answers with `decisions`, in order.
    pub fn new(decisions: impl IntoIterator<Item = Decision>) -> Self {
        Self {
            decisions: decisions.into_iter().collect(),
        }
    }

    /// Decisions not yet given.
    pub fn remaining(&self) -> usize {
        self.decisions.len()
    }
}

impl Brain for ScriptedBrain {
    fn kind(&self) -> BrainKind {
        BrainKind::Scripted
    }

    fn decide(&mut self, obs: &Observation, registry: &SkillRegistry) -> Thinking {
        Thinking::Done(Ok(match self.decisions.pop_front() {
            Some(d) => (d, BrainKind::Scripted),
            None => (rule::decide(obs, registry), BrainKind::Rule),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DecisionType;

    #[test]
    fn decisions_come_in_order_then_the_rule_brain() {
        let mut b = ScriptedBrain::new([
            Decision::new(DecisionType::Replan, "scripted one"),
            Decision::new(DecisionType::Finish, "scripted two"),
        ]);
        let registry = SkillRegistry::with_builtins().unwrap();
        let obs: Observation = serde_json::from_value(serde_json::json!({
            "time": 1.0, "task_id": "t1", "task_kind": "goto", "title": "go to kitchen",
            "plan": [{"skill": "navigate_to", "args": {"zone": "kitchen"}}], "step": 0,
            "plan_len": 1,
            "iteration": 1, "zone": null, "battery_pct": 90.0, "charging": false,
            "battery_resume_pct": 80.0, "distance_to_target": null, "running": [],
            "last_result": null, "failures": 0, "no_progress": null, "preempt": null,
            "blocked_passages": [], "incidents": [], "replan_wait_s": 3.0
        }))
        .unwrap();
        let kinds: Vec<(DecisionType, BrainKind)> = (0..3)
            .map(|_| match b.decide(&obs, &registry) {
                Thinking::Done(Ok((d, k))) => (d.decision_type, k),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                (DecisionType::Replan, BrainKind::Scripted),
                (DecisionType::Finish, BrainKind::Scripted),
                (DecisionType::Continue, BrainKind::Rule),
            ]
        );
    }
}
