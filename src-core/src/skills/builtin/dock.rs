//! `dock`: go to the charger and start charging.

use serde_json::{Value, json};

use super::super::{Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::link::{GoalKind, LinkRequest};

/// Drives to the dock pose and starts charging.
pub struct Dock {
    spec: SkillSpec,
}

impl Dock {
    /// The skill with its spec.
    pub fn new() -> Self {
        let mut spec = super::spec(
            "dock",
            "Drive to the charger's dock and start charging.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        );
        spec.resources = vec!["base".into()];
        spec.timeout_s = 300.0;
        spec.success_criteria = "docked and charging".into();
        spec.error_map = super::motion_error_map();
        spec.reply_templates = vec!["Going to the charger.".into()];
        spec.capabilities = vec!["mobility".into(), "power".into()];
        Self { spec }
    }
}

impl Default for Dock {
    fn default() -> Self {
        Self::new()
    }
}

impl Skill for Dock {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn start(
        &mut self,
        goal_id: &str,
        _args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        ctx.link.send(LinkRequest::SendGoal {
            goal_id: goal_id.to_string(),
            kind: GoalKind::Dock,
        })?;
        Ok(Started::OnRobot)
    }

    fn cancel(&mut self, goal_id: &str, ctx: &mut SkillContext<'_>) -> Result<(), SkillError> {
        ctx.link.send(LinkRequest::Cancel {
            goal_id: goal_id.to_string(),
        })?;
        Ok(())
    }
}
