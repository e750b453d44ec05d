//! Building the model's requests (pure): the decision schema (seed 003 R2),
//! the compact observation (seed 003 §4: a summary, never raw data), the
//! skill registry as function definitions, and the body for each way of
//! asking — a forced `decide` tool call, a JSON-schema response format, or
//! plain JSON described in the prompt.

use serde_json::{Map, Value, json};

use crate::llm::Structured;
use crate::react::Observation;
use crate::skills::{ModelNames, SkillRegistry};

/// The longest `reason` a decision may give, in characters: a small model
/// that repeats a sentence is stopped by the schema (where the endpoint
/// enforces it) and refused by the validator (everywhere).
pub const REASON_MAX_CHARS: usize = 300;

/// The JSON Schema of a decision, with `skill` limited to `skills`.
pub fn decision_schema(skills: &[String]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["type", "reason"],
        "properties": {
            "type": {"enum": ["CONTINUE", "REPLAN", "RETRY", "SWITCH_TASK", "ASK_HUMAN", "FINISH", "ABORT"]},
            "reason": {"type": "string", "minLength": 1, "maxLength": REASON_MAX_CHARS, "description": "why, in one short sentence an operator reads"},
            "plan_patch": {
                "type": "object",
                "additionalProperties": false,
                "properties": {"skip_current": {"type": "boolean", "description": "skip the plan's current step"}}
            },
            "ops": {
                "type": "array",
                "items": {"oneOf": [
                    {
                        "type": "object", "additionalProperties": false,
                        "required": ["op", "skill", "args"],
                        "properties": {
                            "op": {"const": "dispatch"},
                            "skill": {"enum": skills},
                            "args": {"type": "object"}
                        }
                    },
                    {
                        "type": "object", "additionalProperties": false,
                        "required": ["op", "goal_id"],
                        "properties": {"op": {"const": "cancel"}, "goal_id": {"type": "string", "maxLength": 64}}
                    },
                    {
                        "type": "object", "additionalProperties": false,
                        "required": ["op", "seconds"],
                        "properties": {"op": {"const": "wait"}, "seconds": {"type": "number", "minimum": 0}}
                    }
                ]}
            }
        }
    })
}

/// Every skill as an OpenAI function definition, under the name the model
/// sees ([`ModelNames`]).
pub fn skill_functions(registry: &SkillRegistry, names: &ModelNames) -> Vec<Value> {
    registry
        .specs()
        .map(|spec| {
            let mut function = spec.to_function();
            function["function"]["name"] = Value::from(names.model(&spec.name));
            function
        })
        .collect()
}

/// Every skill as one line for the compact prompt, under the name the model
/// sees: `name(arg: type, opt?: type): the description's first sentence`.
/// The argument schemas are still enforced in full on the reply.
pub fn skill_signatures(registry: &SkillRegistry, names: &ModelNames) -> String {
    registry
        .specs()
        .map(|spec| {
            format!(
                "- {}({}): {}",
                names.model(&spec.name),
                arguments(&spec.args_schema),
                first_sentence(&spec.description)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An object schema's properties as `name: type`, `?` marking the optional
/// (`zone?: string, x?: number`): a function's arguments in a few characters.
pub fn arguments(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| {
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{name}{optional}: {}", type_of(prop))
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// A property schema in a few characters: `string`, `kitchen|hall`,
/// `string[]`, `{a: number}`, `number|null`.
fn type_of(schema: &Value) -> String {
    let alternatives = |list: &Value, each: &dyn Fn(&Value) -> String| {
        list.as_array()
            .map(|a| a.iter().map(each).collect::<Vec<_>>().join("|"))
    };
    let bare = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(c) = schema.get("const") {
        return bare(c);
    }
    if let Some(e) = schema.get("enum").and_then(|e| alternatives(e, &bare)) {
        return e;
    }
    if let Some(any) = ["oneOf", "anyOf"]
        .iter()
        .find_map(|k| schema.get(*k).and_then(|l| alternatives(l, &type_of)))
    {
        return any;
    }
    match schema.get("type") {
        Some(Value::Array(types)) => types.iter().map(bare).collect::<Vec<_>>().join("|"),
        Some(Value::String(t)) if t == "array" => {
            let item = schema.get("items").map_or_else(|| "any".into(), type_of);
            if item.contains('|') {
                format!("({item})[]")
            } else {
                format!("{item}[]")
            }
        }
        Some(Value::String(t)) if t == "object" && schema.get("properties").is_some() => {
            format!("{{{}}}", arguments(schema))
        }
        Some(Value::String(t)) => t.clone(),
        _ => "any".into(),
    }
}

/// Up to the first sentence's full stop (the whole text when it has none).
fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |i| &text[..=i])
}

/// Rounds floats to 0.01 and drops nulls and empty lists or objects, so the
/// model reads a short summary.
pub fn compact(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if n.is_f64() => json!((f * 100.0).round() / 100.0),
            _ => value.clone(),
        }),
        Value::Array(a) => {
            let items: Vec<Value> = a.iter().filter_map(compact).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(o) => {
            let map: Map<String, Value> = o
                .iter()
                .filter_map(|(k, v)| compact(v).map(|v| (k.clone(), v)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other.clone()),
    }
}

/// The observation as the model sees it: compact JSON text.
pub fn observation_text(obs: &Observation) -> String {
    let value = serde_json::to_value(obs).unwrap_or(Value::Null);
    compact(&value).unwrap_or(Value::Null).to_string()
}

/// The `decide` tool: the decision as a function's parameters.
fn decide_tool(schema: &Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "decide",
            "description": "Give the decision for this turn.",
            "parameters": schema,
        }
    })
}

/// A chat-completions body asking for a decision in `mode`.
pub fn body(
    model: &str,
    messages: &[Value],
    mode: Structured,
    schema: &Value,
    stream: bool,
    temperature: f64,
) -> Value {
    let mut body = json!({
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    match mode {
        Structured::Tools | Structured::Auto => {
            body["tools"] = json!([decide_tool(schema)]);
            body["tool_choice"] = json!({"type": "function", "function": {"name": "decide"}});
        }
        Structured::JsonSchema => {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "decision", "schema": schema, "strict": false},
            });
        }
        Structured::Json => {}
    }
    body
}

/// The next way to ask when the endpoint refuses `mode`, if any is left.
pub fn step_down(mode: Structured) -> Option<Structured> {
    match mode {
        Structured::Auto | Structured::Tools => Some(Structured::JsonSchema),
        Structured::JsonSchema => Some(Structured::Json),
        Structured::Json => None,
    }
}

/// A chat message.
pub fn message(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observation_is_compact() {
        let v = json!({"a": null, "b": [], "c": 1.23456, "d": {"e": null}, "f": false, "g": 3});
        assert_eq!(compact(&v).unwrap(), json!({"c": 1.23, "f": false, "g": 3}));
    }

    #[test]
    fn a_skill_signature_is_one_short_line() {
        let schema = json!({
            "type": "object",
            "properties": {
                "zone": {"type": "string", "enum": ["kitchen", "hall"]},
                "kinds": {"type": "array", "items": {"type": "string"}},
                "evidence": {"type": ["string", "null"]},
                "at": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
                "mode": {"oneOf": [{"const": "on"}, {"const": "off"}]},
                "extra": {}
            },
            "required": ["zone"]
        });
        assert_eq!(
            arguments(&schema),
            "at?: {x: number}, evidence?: string|null, extra?: any, kinds?: string[], mode?: on|off, zone: kitchen|hall"
        );
        assert_eq!(first_sentence("Go there. Then stop."), "Go there.");
        assert_eq!(first_sentence("Go there."), "Go there.");
    }

    #[test]
    fn each_mode_asks_its_own_way() {
        let schema = decision_schema(&["navigate_to".into()]);
        let msgs = [message("user", "hi")];
        let tools = body("m", &msgs, Structured::Tools, &schema, true, 0.0);
        assert_eq!(tools["tool_choice"]["function"]["name"], "decide");
        assert_eq!(tools["stream_options"]["include_usage"], true);
        let js = body("m", &msgs, Structured::JsonSchema, &schema, false, 0.0);
        assert_eq!(js["response_format"]["type"], "json_schema");
        assert!(js.get("tools").is_none());
        let plain = body("m", &msgs, Structured::Json, &schema, false, 0.0);
        assert!(plain.get("response_format").is_none() && plain.get("tools").is_none());
        assert_eq!(step_down(Structured::Tools), Some(Structured::JsonSchema));
        assert_eq!(step_down(Structured::Json), None);
    }
}
