//! Reading the model's answer (pure): the decision's text from a `decide`
//! tool call or the content, parsed as JSON, checked against the decision
//! schema and every dispatch against its skill's argument schema — before
//! any guardrail sees it. A refusal says exactly what was wrong, because it
//! goes back to the model for its one repair.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::llm::accumulate::Completion;
use crate::protocol::Op;
use crate::react::Decision;

/// What the validator holds: the decision schema and each skill's args schema.
pub struct Validators {
    /// The decision schema, compiled.
    pub decision: jsonschema::Validator,
    /// Args schemas by skill name.
    pub skills: BTreeMap<String, jsonschema::Validator>,
}

/// The text that should hold the decision: the `decide` call's arguments, or
/// the content (without Markdown code fences).
pub fn decision_text(completion: &Completion) -> Result<String, String> {
    let Some(choice) = completion.choices.get(&0) else {
        return Err("the reply has no choices".into());
    };
    if !choice.refusal.trim().is_empty() {
        return Err(format!("the model refused: {}", choice.refusal.trim()));
    }
    if let Some(call) = choice.tool_calls.first() {
        if call.name != "decide" {
            return Err(format!(
                "called `{}`; call `decide` with the decision instead",
                call.name
            ));
        }
        return Ok(call.arguments.clone());
    }
    let text = choice.content.trim();
    if text.is_empty() {
        return Err("the reply is empty".into());
    }
    Ok(strip_fences(text).to_string())
}

fn strip_fences(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Parses and validates a decision.
pub fn parse_decision(text: &str, validators: &Validators) -> Result<Decision, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the reply is not valid JSON ({e})"))?;
    // Unknown skills first: the schema would only say "not valid under oneOf".
    let ops = value
        .get("ops")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, op) in ops.iter().enumerate() {
        if let Some(skill) = op.get("skill").and_then(Value::as_str)
            && !validators.skills.contains_key(skill)
        {
            let known: Vec<&str> = validators.skills.keys().map(String::as_str).collect();
            return Err(format!(
                "ops[{i}]: unknown skill `{skill}`; skills: {}",
                known.join(", ")
            ));
        }
    }
    let problems: Vec<String> = validators
        .decision
        .iter_errors(&value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().as_str().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at `{at}`: {e}")
            }
        })
        .collect();
    if !problems.is_empty() {
        return Err(format!(
            "the decision breaks the schema: {}",
            problems.join("; ")
        ));
    }
    let decision: Decision = serde_json::from_value(value)
        .map_err(|e| format!("the decision breaks the schema: {e}"))?;
    for (i, op) in decision.ops.iter().enumerate() {
        if let Op::Dispatch { skill, args } = op {
            let Some(v) = validators.skills.get(skill) else {
                let known: Vec<&str> = validators.skills.keys().map(String::as_str).collect();
                return Err(format!(
                    "ops[{i}]: unknown skill `{skill}`; skills: {}",
                    known.join(", ")
                ));
            };
            if let Err(e) = v.validate(args) {
                let at = e.instance_path().as_str().to_string();
                return Err(format!(
                    "ops[{i}]: invalid args for `{skill}` at `{at}`: {e}"
                ));
            }
        }
    }
    Ok(decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brain::llm::request::decision_schema;
    use crate::llm::accumulate::{Choice, ToolCall};
    use serde_json::json;

    fn validators() -> Validators {
        let schema = decision_schema(&["navigate_to".into()]);
        let mut skills = BTreeMap::new();
        skills.insert(
            "navigate_to".to_string(),
            jsonschema::validator_for(&json!({"type": "object", "required": ["zone"],
                "properties": {"zone": {"type": "string"}}}))
            .unwrap(),
        );
        Validators {
            decision: jsonschema::validator_for(&schema).unwrap(),
            skills,
        }
    }

    #[test]
    fn a_good_decision_passes() {
        let d = parse_decision(
            r#"{"type":"REPLAN","reason":"door blocked","ops":[{"op":"dispatch","skill":"navigate_to","args":{"zone":"kitchen"}}]}"#,
            &validators(),
        )
        .unwrap();
        assert_eq!(d.decision_type, crate::protocol::DecisionType::Replan);
    }

    #[test]
    fn bad_decisions_say_what_is_wrong() {
        let v = validators();
        assert!(
            parse_decision("{not json", &v)
                .unwrap_err()
                .starts_with("the reply is not valid JSON")
        );
        let e = parse_decision(r#"{"type":"JUMP","reason":"x"}"#, &v).unwrap_err();
        assert!(e.contains("at `/type`"), "{e}");
        let e = parse_decision(
            r#"{"type":"CONTINUE","reason":"x","ops":[{"op":"dispatch","skill":"fly","args":{}}]}"#,
            &v,
        )
        .unwrap_err();
        assert_eq!(e, "ops[0]: unknown skill `fly`; skills: navigate_to");
        let e = parse_decision(
            r#"{"type":"CONTINUE","reason":"x","ops":[{"op":"dispatch","skill":"navigate_to","args":{"zone":3}}]}"#,
            &v,
        )
        .unwrap_err();
        assert!(
            e.starts_with("ops[0]: invalid args for `navigate_to` at `/zone`"),
            "{e}"
        );
    }

    #[test]
    fn the_text_comes_from_decide_or_the_content() {
        let mut c = Completion::default();
        c.choices.insert(
            0,
            Choice {
                content: "```json\n{\"a\":1}\n```".into(),
                ..Choice::default()
            },
        );
        assert_eq!(decision_text(&c).unwrap(), "{\"a\":1}");
        c.choices.get_mut(&0).unwrap().tool_calls.push(ToolCall {
            name: "navigate_to".into(),
            ..ToolCall::default()
        });
        assert!(decision_text(&c).unwrap_err().contains("call `decide`"));
    }
}
