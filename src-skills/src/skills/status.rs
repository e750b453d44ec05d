//! `robot_status`: a read-only skill that reports where the robot is and how
//! its battery stands. Not a built-in the brain plans with: faces that serve
//! outside agents (`robobrain mcp`) register it, so an agent can look before
//! it asks the robot to move.

use serde_json::{Value, json};

use super::{MainType, Risk, Skill, SkillContext, SkillError, SkillSpec, Started, SubType};

/// Reports the robot's zone, pose, battery and busy resources, and the world's zones.
pub struct RobotStatus {
    spec: SkillSpec,
}

impl RobotStatus {
    /// The skill with its spec.
    pub fn new() -> Self {
        Self {
            spec: SkillSpec {
                name: "robot_status".into(),
                description: "Where the robot is (zone and pose), its battery, whether it is \
                              charging, what it is busy with, and the zones it knows."
                    .into(),
                args_schema: json!({
                    "type": "object",
                    "properties": {},
                    "additionalProperties": false
                }),
                main_type: MainType::Local,
                sub_type: SubType::Query,
                risk: Risk::Read,
                resources: Vec::new(),
                shared_resources: Vec::new(),
                preemptible: true,
                cancel_supported: false,
                timeout_s: 5.0,
                success_criteria: "the status was read".into(),
                error_map: Vec::new(),
                reply_templates: Vec::new(),
                version: "1.0".into(),
                dependencies: Vec::new(),
                capabilities: vec!["status".into()],
            },
        }
    }
}

impl Default for RobotStatus {
    fn default() -> Self {
        Self::new()
    }
}

impl Skill for RobotStatus {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn start(
        &mut self,
        _goal_id: &str,
        _args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let t = ctx.telemetry;
        let zones: Vec<&str> = ctx.world.zones.iter().map(|z| z.name.as_str()).collect();
        Ok(Started::Done(json!({
            "zone": t.zone,
            "pose": t.pose,
            "battery_pct": (t.battery_pct * 10.0).round() / 10.0,
            "charging": t.charging,
            "distance_to_target": t.distance_to_target,
            "busy": t.busy,
            "zones": zones,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Telemetry;
    use crate::{sim::SimLink, world::World};

    #[test]
    fn it_reports_the_zone_battery_and_known_zones() {
        let world = World::builtin("apartment").unwrap();
        let mut link = SimLink::new(world.clone(), 1);
        let telemetry = Telemetry {
            zone: Some("kitchen".into()),
            battery_pct: 81.26,
            ..Telemetry::default()
        };
        let mut speech = Vec::new();
        let mut ctx = SkillContext {
            world: &world,
            link: &mut link,
            telemetry: &telemetry,
            speech: &mut speech,
        };
        let Started::Done(out) = RobotStatus::new().start("g", &json!({}), &mut ctx).unwrap()
        else {
            panic!("not instant");
        };
        assert_eq!(out["zone"], "kitchen");
        assert_eq!(out["battery_pct"], 81.3);
        assert!(out["zones"].as_array().unwrap().contains(&json!("study")));
    }
}
