//! The skill registry as MCP tools: one definition per [`SkillSpec`] (its
//! name, description, args schema, and its risk and types in annotations
//! and `_meta`), and the check a call's arguments pass before the kernel
//! sees them.

use serde_json::{Value, json};
use thiserror::Error;

use crate::skills::{Risk, SkillSpec, SubType};

/// Why a tool call was refused before it reached the kernel.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool `{name}`; tools: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The tools there are, comma-separated.
        known: String,
    },
    /// The arguments break the tool's input schema.
    #[error("invalid arguments for `{tool}` at `{path}`: {message}")]
    InvalidArgs {
        /// The tool.
        tool: String,
        /// JSON pointer to the offending value, empty for the root.
        path: String,
        /// What was expected.
        message: String,
    },
    /// A spec's args schema does not compile (a bug in the skill).
    #[error("tool `{tool}` has an invalid input schema: {message}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
}

/// The MCP tool definition of `spec` (the JSON of the protocol's `Tool`).
///
/// The risk level is in the description (for models that read only that),
/// in `_meta` with the main and sub types, and in the standard hints: `read`
/// risk is read-only, `high_write` is destructive.
pub fn tool_definition(spec: &SkillSpec) -> Value {
    let read_only = spec.risk == Risk::Read;
    let mut annotations = json!({
        "title": spec.name.replace(['_', '.'], " "),
        "readOnlyHint": read_only,
        "openWorldHint": false,
    });
    if !read_only {
        annotations["destructiveHint"] = json!(spec.risk == Risk::HighWrite);
        annotations["idempotentHint"] = json!(spec.sub_type == SubType::Query);
    }
    json!({
        "name": spec.name,
        "description": format!("{} (risk: {})", spec.description, spec.risk.as_str()),
        "inputSchema": input_schema(&spec.args_schema),
        "annotations": annotations,
        "_meta": {
            "robobrain/risk": spec.risk,
            "robobrain/main_type": spec.main_type,
            "robobrain/sub_type": spec.sub_type,
            "robobrain/capabilities": spec.capabilities,
            "robobrain/resources": spec.resources,
        },
    })
}

/// MCP wants an object schema at the top; a spec whose schema has no `type`
/// (only `oneOf`, say) gets `"type": "object"` added.
fn input_schema(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(_) => schema.clone(),
        _ => json!({}),
    };
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    schema
}

struct Entry {
    spec: SkillSpec,
    validator: jsonschema::Validator,
}

/// The tools an MCP server offers, with their compiled argument validators.
pub struct ToolSet {
    entries: Vec<Entry>,
}

impl ToolSet {
    /// The tools of `specs`, in their order.
    pub fn new(specs: impl IntoIterator<Item = SkillSpec>) -> Result<Self, ToolError> {
        let entries = specs
            .into_iter()
            .map(|spec| {
                let validator = jsonschema::validator_for(&spec.args_schema).map_err(|e| {
                    ToolError::BadSchema {
                        tool: spec.name.clone(),
                        message: e.to_string(),
                    }
                })?;
                Ok(Entry { spec, validator })
            })
            .collect::<Result<_, ToolError>>()?;
        Ok(Self { entries })
    }

    /// Every tool definition.
    pub fn definitions(&self) -> Vec<Value> {
        self.entries
            .iter()
            .map(|e| tool_definition(&e.spec))
            .collect()
    }

    /// The spec behind tool `name`.
    pub fn spec(&self, name: &str) -> Option<&SkillSpec> {
        self.entries
            .iter()
            .find(|e| e.spec.name == name)
            .map(|e| &e.spec)
    }

    /// Checks that `name` is a tool and `args` fit its schema.
    pub fn check(&self, name: &str, args: &Value) -> Result<&SkillSpec, ToolError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.spec.name == name)
            .ok_or_else(|| ToolError::Unknown {
                name: name.to_string(),
                known: self
                    .entries
                    .iter()
                    .map(|e| e.spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        entry
            .validator
            .validate(args)
            .map_err(|e| ToolError::InvalidArgs {
                tool: name.to_string(),
                path: e.instance_path().as_str().to_string(),
                message: e.to_string(),
            })?;
        Ok(&entry.spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillRegistry;

    fn builtins() -> ToolSet {
        let registry = SkillRegistry::with_builtins().unwrap();
        ToolSet::new(registry.specs().cloned()).unwrap()
    }

    #[test]
    fn a_spec_becomes_a_tool_with_its_schema_and_risk() {
        let registry = SkillRegistry::with_builtins().unwrap();
        let tool = tool_definition(registry.spec("navigate_to").unwrap());
        assert_eq!(tool["name"], "navigate_to");
        assert!(
            tool["description"]
                .as_str()
                .unwrap()
                .ends_with("(risk: low_write)")
        );
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert_eq!(tool["inputSchema"]["properties"]["zone"]["type"], "string");
        assert_eq!(tool["annotations"]["readOnlyHint"], false);
        assert_eq!(tool["annotations"]["destructiveHint"], false);
        assert_eq!(tool["_meta"]["robobrain/risk"], "low_write");
        assert_eq!(tool["_meta"]["robobrain/main_type"], "local");
        assert_eq!(tool["_meta"]["robobrain/sub_type"], "control");
    }

    #[test]
    fn a_read_skill_is_read_only_and_a_high_write_one_destructive() {
        let registry = SkillRegistry::with_builtins().unwrap();
        let mut spec = registry.spec("speak").unwrap().clone();
        spec.risk = Risk::Read;
        let tool = tool_definition(&spec);
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        assert!(tool["annotations"].get("destructiveHint").is_none());
        spec.risk = Risk::HighWrite;
        assert_eq!(
            tool_definition(&spec)["annotations"]["destructiveHint"],
            true
        );
    }

    #[test]
    fn calls_are_checked_against_the_tools() {
        let tools = builtins();
        assert!(
            tools
                .check("navigate_to", &json!({"zone": "kitchen"}))
                .is_ok()
        );
        match tools.check("fly", &json!({})) {
            Err(ToolError::Unknown { name, known }) => {
                assert_eq!(name, "fly");
                assert!(
                    known.starts_with("navigate_to, stop_base, dock, speak"),
                    "{known}"
                );
            }
            other => panic!("{other:?}"),
        }
        match tools.check("speak", &json!({"text": 7})) {
            Err(ToolError::InvalidArgs { tool, path, .. }) => {
                assert_eq!((tool.as_str(), path.as_str()), ("speak", "/text"));
            }
            other => panic!("{other:?}"),
        }
        let e = tools.check("speak", &json!({"volume": 3})).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid arguments for `speak`"),
            "{e}"
        );
        let registry = SkillRegistry::with_builtins().unwrap();
        assert_eq!(tools.definitions().len(), registry.specs().count());
    }
}
