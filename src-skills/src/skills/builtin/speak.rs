//! `speak`: say something. The line is a `speech` event; the engine's
//! speaker voices it (robobrain-core's `voice`: the speech model, espeak-ng, or text only).

use serde_json::{Value, json};

use super::super::{Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::protocol::SpeechTrack;

/// Says a line of text.
pub struct Speak {
    spec: SkillSpec,
}

impl Speak {
    /// The skill with its spec.
    pub fn new() -> Self {
        let mut spec = super::spec(
            "speak",
            "Say a short sentence to the people nearby.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 500}},
                "required": ["text"],
                "additionalProperties": false
            }),
        );
        spec.shared_resources = vec!["speaker".into()];
        super::declare(&mut spec, 10.0, "the line was spoken", "speech");
        Self { spec }
    }
}

impl Skill for Speak {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn start(
        &mut self,
        _goal_id: &str,
        args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let text = args
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        ctx.speech.push((text.clone(), SpeechTrack::Answer));
        Ok(Started::Done(json!({"spoken": text})))
    }
}
