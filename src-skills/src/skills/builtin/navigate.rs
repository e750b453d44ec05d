//! `navigate_to`: drive to a zone or a point (Nav2's `NavigateToPose`).

use serde_json::{Value, json};

use super::super::{Motion, Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::geometry::Point;
use crate::link::{GoalKind, LinkRequest};
use crate::world::World;

/// Drives the base to a zone's goal point or to `(x, y)`.
pub struct NavigateTo {
    spec: SkillSpec,
}

impl NavigateTo {
    /// The skill with its spec.
    pub fn new() -> Self {
        let mut spec = super::spec(
            "navigate_to",
            "Drive the robot to a named zone (kitchen, bedroom, …) or to a point in metres.",
            json!({
                "type": "object",
                "properties": {
                    "zone": {"type": "string", "minLength": 1, "description": "zone name"},
                    "x": {"type": "number", "description": "metres east"},
                    "y": {"type": "number", "description": "metres south"}
                },
                "oneOf": [{"required": ["zone"]}, {"required": ["x", "y"]}],
                "additionalProperties": false
            }),
        );
        spec.resources = vec!["base".into()];
        spec.timeout_s = 240.0;
        spec.success_criteria = "within 0.25 m of the target".into();
        spec.error_map = super::motion_error_map();
        spec.reply_templates = vec![
            "OK, heading to #{zone}.".into(),
            "On my way to #{zone}.".into(),
        ];
        spec.capabilities = vec!["mobility".into()];
        Self { spec }
    }

    fn target(args: &Value, world: &World) -> Result<(Point, Option<String>), SkillError> {
        if let Some(zone) = args.get("zone").and_then(Value::as_str) {
            let z = world.zone(zone).ok_or_else(|| SkillError::Refused {
                skill: "navigate_to".into(),
                message: format!(
                    "unknown zone `{zone}`; known zones: {}",
                    world
                        .zones
                        .iter()
                        .map(|z| z.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
            return Ok((z.goal, Some(z.name.clone())));
        }
        let x = args.get("x").and_then(Value::as_f64);
        let y = args.get("y").and_then(Value::as_f64);
        match (x, y) {
            (Some(x), Some(y)) => Ok((Point::new(x, y), None)),
            _ => Err(SkillError::Refused {
                skill: "navigate_to".into(),
                message: "expected a `zone` or both `x` and `y`".into(),
            }),
        }
    }
}

impl Skill for NavigateTo {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn check(&self, args: &Value, world: &World) -> Result<(), SkillError> {
        Self::target(args, world).map(|_| ())
    }

    /// The zone's goal point or `(x, y)`: the policy judges where that is
    /// and the path there, never the name.
    fn motion(&self, args: &Value, world: &World) -> Motion {
        match Self::target(args, world) {
            Ok((target, Some(zone))) => Motion::To {
                target,
                what: format!("the {zone}"),
            },
            Ok((target, None)) => Motion::To {
                target,
                what: format!("({:.2}, {:.2})", target.x, target.y),
            },
            Err(_) => Motion::Unknown,
        }
    }

    fn start(
        &mut self,
        goal_id: &str,
        args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let (target, zone) = Self::target(args, ctx.world)?;
        ctx.link.send(LinkRequest::SendGoal {
            goal_id: goal_id.to_string(),
            kind: GoalKind::Navigate { target, zone },
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
