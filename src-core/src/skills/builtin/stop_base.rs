//! `stop_base`: cancel every base goal and brake (the E-stop's action).

use serde_json::{Value, json};

use super::super::{Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::link::{GoalKind, LinkRequest};

/// Stops the base at once.
pub struct StopBase {
    spec: SkillSpec,
}

impl StopBase {
    /// The skill with its spec.
    pub fn new() -> Self {
        let mut spec = super::spec(
            "stop_base",
            "Cancel every base goal and bring the robot to rest.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        );
        spec.preemptible = false;
        spec.cancel_supported = false;
        spec.timeout_s = 5.0;
        spec.success_criteria = "stop sent to the base".into();
        spec.reply_templates = vec!["Stopping.".into()];
        spec.capabilities = vec!["mobility".into(), "safety".into()];
        Self { spec }
    }
}

impl Default for StopBase {
    fn default() -> Self {
        Self::new()
    }
}

impl Skill for StopBase {
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
            kind: GoalKind::StopBase,
        })?;
        Ok(Started::Done(json!({"stopped": true})))
    }
}
