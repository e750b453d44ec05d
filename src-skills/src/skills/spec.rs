//! What a skill declares about itself: one spec serves the registry, the
//! guardrails, the policy, the model's function list and (later) MCP.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::protocol::Risk;

/// Where a skill runs (seed 002 `main_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MainType {
    /// On the robot or in-process.
    Local,
    /// A remote service.
    Remote,
}

/// What a skill does to the world (seed 002 `sub_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubType {
    /// Changes something.
    Control,
    /// Only reads.
    Query,
}

/// What the brain should do about a skill error code (the spec's error map).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Try again as it was.
    Retry,
    /// Plan differently (another route, wait).
    Replan,
    /// Ask the operator.
    AskHuman,
    /// Carry on without this step (a patrol's look around when the camera fails).
    Skip,
}

/// A skill's declaration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSpec {
    /// Unique name (`navigate_to`).
    pub name: String,
    /// What it does, for people and models.
    pub description: String,
    /// JSON Schema of its arguments.
    pub args_schema: Value,
    /// Local or remote.
    pub main_type: MainType,
    /// Control or query.
    pub sub_type: SubType,
    /// Risk level.
    pub risk: Risk,
    /// Exclusive resources it holds while running (`base`, `arm`).
    pub resources: Vec<String>,
    /// Resources it uses that others may use at the same time (`speaker`).
    pub shared_resources: Vec<String>,
    /// Whether a higher-priority task may cancel it.
    pub preemptible: bool,
    /// Whether it can be cancelled once started.
    pub cancel_supported: bool,
    /// Seconds before the runner cancels it with `timeout`.
    pub timeout_s: f64,
    /// How success is judged, in words.
    pub success_criteria: String,
    /// Error code → what to do about it.
    pub error_map: Vec<(String, Recovery)>,
    /// Reply templates with `#{arg}` slots; one is picked per reply.
    pub reply_templates: Vec<String>,
    /// Version of the skill.
    pub version: String,
    /// Skills this one needs.
    pub dependencies: Vec<String>,
    /// Capability tags (`mobility`, `speech`, …).
    pub capabilities: Vec<String>,
}

impl SkillSpec {
    /// The recovery the spec suggests for `code`, if it names one.
    pub fn recovery_for(&self, code: &str) -> Option<Recovery> {
        self.error_map
            .iter()
            .find(|(c, _)| c == code)
            .map(|(_, r)| *r)
    }

    /// The spec as an OpenAI-style function definition.
    pub fn to_function(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.args_schema,
            }
        })
    }
}
/// A skill as a face's approval editor needs it.
impl From<&SkillSpec> for crate::protocol::SkillView {
    fn from(spec: &SkillSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            args_schema: spec.args_schema.clone(),
            risk: spec.risk,
        }
    }
}
