//! `dock` and `stop_base`: skills that send the base one fixed goal.

use serde_json::{Value, json};

use super::super::{Motion, Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::link::{GoalKind, LinkRequest};
use crate::world::World;

/// A skill whose every call sends the same goal to the base.
pub struct BaseGoal {
    spec: SkillSpec,
    goal: GoalKind,
}

impl BaseGoal {
    /// `dock`: drive to the charger's dock and start charging.
    pub fn dock() -> Self {
        let mut spec = super::spec(
            "dock",
            "Drive to the charger's dock and start charging.",
            no_args(),
        );
        spec.resources = vec!["base".into()];
        spec.timeout_s = 300.0;
        spec.success_criteria = "docked and charging".into();
        spec.error_map = super::motion_error_map();
        spec.reply_templates = vec!["Going to the charger.".into()];
        spec.capabilities = vec!["mobility".into(), "power".into()];
        Self {
            spec,
            goal: GoalKind::Dock,
        }
    }

    /// `stop_base`: cancel every base goal and brake (the E-stop's action).
    /// It holds no resource, so nothing can keep it from running.
    pub fn stop_base() -> Self {
        let mut spec = super::spec(
            "stop_base",
            "Cancel every base goal and bring the robot to rest.",
            no_args(),
        );
        spec.preemptible = false;
        spec.cancel_supported = false;
        spec.timeout_s = 5.0;
        spec.success_criteria = "stop sent to the base".into();
        spec.reply_templates = vec!["Stopping.".into()];
        spec.capabilities = vec!["mobility".into(), "safety".into()];
        Self {
            spec,
            goal: GoalKind::StopBase,
        }
    }
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

impl Skill for BaseGoal {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    /// `dock` drives to the dock pose; `stop_base` brakes where it is.
    fn motion(&self, _args: &Value, world: &World) -> Motion {
        match self.goal {
            GoalKind::Dock => Motion::To {
                target: world.dock_pose.point(),
                what: "the dock".into(),
            },
            GoalKind::StopBase => Motion::Still,
            GoalKind::Navigate { target, .. } => Motion::To {
                target,
                what: format!("({:.2}, {:.2})", target.x, target.y),
            },
        }
    }

    fn start(
        &mut self,
        goal_id: &str,
        _args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        ctx.link.send(LinkRequest::SendGoal {
            goal_id: goal_id.to_string(),
            kind: self.goal.clone(),
        })?;
        // A stop is done once sent: the base brakes at once and no result is awaited.
        Ok(if self.goal == GoalKind::StopBase {
            Started::Done(json!({"stopped": true}))
        } else {
            Started::OnRobot
        })
    }

    fn cancel(&mut self, goal_id: &str, ctx: &mut SkillContext<'_>) -> Result<(), SkillError> {
        super::cancel_on_robot(goal_id, ctx)
    }
}
