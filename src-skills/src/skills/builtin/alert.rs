//! `alert` (seed 000 §3, §11.2): raise an alert about an incident. The
//! kernel records it (id, time, zone, what was seen, the evidence frame by
//! path, the vision result), announces it in an `alert` event and keeps the
//! activity at ALERT until an operator acknowledges it.

use serde_json::{Value, json};

use super::super::{Skill, SkillContext, SkillError, SkillSpec, Started};

/// Raises an alert.
pub struct Alert {
    spec: SkillSpec,
}

impl Alert {
    /// The skill with its spec.
    pub fn new() -> Self {
        let mut spec = super::spec(
            "alert",
            "Raise an alert about an incident (fire, smoke, intruder) so an operator deals with it.",
            json!({
                "type": "object",
                "properties": {
                    "zone": {"type": "string", "minLength": 1},
                    "kinds": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "description": {"type": "string"},
                    "evidence": {"type": ["string", "null"]},
                    "vision": {"type": "object"}
                },
                "required": ["zone", "kinds"],
                "additionalProperties": false
            }),
        );
        super::declare(
            &mut spec,
            5.0,
            "the alert is recorded and announced",
            "alerting",
        );
        Self { spec }
    }
}

impl Skill for Alert {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn start(
        &mut self,
        _goal_id: &str,
        args: &Value,
        _ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let field = |k: &str| args.get(k).cloned().unwrap_or(Value::Null);
        Ok(Started::Done(json!({
            "summary": format!("alert raised: {}", field("description").as_str().unwrap_or_default()),
            "incident": {
                "zone": field("zone"),
                "kinds": field("kinds"),
                "description": field("description"),
                "evidence": field("evidence"),
                "vision": field("vision"),
            }
        })))
    }
}
