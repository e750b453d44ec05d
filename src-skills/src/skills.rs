//! One registry for what the seeds call actions (000), tools (001, 002) and
//! skills (003): a [`SkillSpec`] declares a capability, a [`Skill`] carries it
//! out like a ROS 2 action (goal id, feedback, cancel, result with an error
//! code), the [`SkillRegistry`] checks arguments against each spec's JSON
//! Schema, and the [`SkillRunner`] tracks running goals, their resources and
//! their time limits. Registering a skill needs no change to the kernel.

pub mod builtin;
pub use crate::llm::model_name;
pub mod registry;
pub mod runner;
pub mod spec;
pub mod status;

use serde_json::Value;
use thiserror::Error;

use crate::geometry::Point;
use crate::link::{LinkError, RobotLink, Telemetry};
use crate::protocol::SpeechTrack;
use crate::world::World;

pub use model_name::ModelNames;
pub use registry::{Init, SkillRegistry};
pub use runner::{Completion, SkillRunner};
pub use spec::{MainType, Recovery, Risk, SkillSpec, SubType};

/// Why a skill could not be registered, checked or started.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillError {
    /// No skill has this name.
    #[error("unknown skill `{0}`")]
    Unknown(String),
    /// A skill with this name is already registered.
    #[error("skill `{0}` is already registered")]
    Duplicate(String),
    /// The skill's args schema is not a valid JSON Schema.
    #[error("skill `{skill}` has an invalid args schema: {message}")]
    BadSchema {
        /// The skill.
        skill: String,
        /// What is wrong.
        message: String,
    },
    /// Arguments break the skill's schema.
    #[error("invalid args for `{skill}` at `{path}`: {message}")]
    InvalidArgs {
        /// The skill.
        skill: String,
        /// JSON pointer to the offending value (`/zone`), or empty for the root.
        path: String,
        /// What was expected.
        message: String,
    },
    /// Arguments are well-formed but make no sense here (an unknown zone).
    #[error("`{skill}` refused: {message}")]
    Refused {
        /// The skill.
        skill: String,
        /// Why.
        message: String,
    },
    /// The robot link refused the request.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// What a skill sees when it starts or cancels a goal.
pub struct SkillContext<'a> {
    /// The world (zones, dock).
    pub world: &'a World,
    /// The robot.
    pub link: &'a mut dyn RobotLink,
    /// The robot's latest state.
    pub telemetry: &'a Telemetry,
    /// Lines to speak, appended by skills that talk.
    pub speech: &'a mut Vec<(String, SpeechTrack)>,
}

/// How a started goal goes on.
#[derive(Debug, Clone, PartialEq)]
pub enum Started {
    /// It runs elsewhere — on the robot (feedback and the result arrive over
    /// the link under the goal id) or off it, like a model call (the result
    /// comes from [`Skill::poll`]).
    OnRobot,
    /// It finished at once with this output. Three keys mean something to
    /// the kernel (here and in results from [`Skill::poll`]): `shared` (an
    /// object merged into the run's shared data, seed 000 §6.2), `utterance`
    /// (words heard, acted on as an operator's `say`) and `incident` (an
    /// [`crate::protocol::IncidentRecord`] to record and announce).
    Done(Value),
    /// It failed at once (a device error, not bad arguments): the brain sees
    /// a failed step with this code, as for a goal the robot failed.
    Failed {
        /// Error code, looked up in the spec's error map.
        code: String,
        /// Detail.
        message: String,
    },
}

/// Where a goal sends the robot's base: what the policy judges a motion by
/// (robobrain-core's `policy::motion`), whatever door the goal came through.
#[derive(Debug, Clone, PartialEq)]
pub enum Motion {
    /// The goal does not move the base.
    Still,
    /// The goal drives the base to `target`.
    To {
        /// Where the base ends, metres.
        target: Point,
        /// The target in words, for reasons (`the kitchen`, `(3.0, 2.0)`, `the dock`).
        what: String,
    },
    /// The goal moves the base, but the skill cannot say where: judged as
    /// going anywhere.
    Unknown,
}

/// A capability with the seed-000 life cycle: initialize, execute (start),
/// cancel, cleanup, metadata (the spec).
pub trait Skill: Send {
    /// The skill's declaration.
    fn spec(&self) -> &SkillSpec;

    /// Prepares the skill with its configuration (called once at registration).
    fn initialize(&mut self, config: &Value) -> Result<(), SkillError> {
        let _ = config;
        Ok(())
    }

    /// Checks arguments beyond the schema (for example that a zone exists).
    fn check(&self, args: &Value, world: &World) -> Result<(), SkillError> {
        let _ = (args, world);
        Ok(())
    }

    /// Where a goal with `args` (already checked) sends the base. The
    /// default: a skill that holds the `base` resource moves it somewhere it
    /// cannot name ([`Motion::Unknown`], so the policy asks an operator
    /// whenever zones need approval); any other skill leaves it still. A
    /// skill that drives the base says where.
    fn motion(&self, args: &Value, world: &World) -> Motion {
        let _ = (args, world);
        if self.spec().resources.iter().any(|r| r == "base") {
            Motion::Unknown
        } else {
            Motion::Still
        }
    }

    /// Starts a goal.
    fn start(
        &mut self,
        goal_id: &str,
        args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError>;

    /// Cancels a running goal.
    fn cancel(&mut self, goal_id: &str, ctx: &mut SkillContext<'_>) -> Result<(), SkillError> {
        let _ = (goal_id, ctx);
        Ok(())
    }

    /// Results of goals that run off the robot (a model call), as they end:
    /// `(goal id, result)`. Called every tick.
    fn poll(&mut self, done: &mut Vec<(String, runner::GoalResult)>) {
        let _ = done;
    }

    /// Whether goals of this skill are being worked on off the robot (a
    /// model call in flight): lockstep runs hold sim time still meanwhile,
    /// as they do while the brain thinks.
    fn is_waiting(&self) -> bool {
        false
    }

    /// Releases what the skill holds (called once at unregistration or shutdown).
    fn cleanup(&mut self) {}
}

/// `args` checked against the schema a run announced for `skill` (its
/// `hello`: built-in, MCP and home skills alike), as a face checks an
/// operator's edit before sending it; the kernel checks it again.
pub fn check_announced(skill: &crate::protocol::SkillView, args: &Value) -> Result<(), SkillError> {
    let invalid = |path: String, message: String| SkillError::InvalidArgs {
        skill: skill.name.clone(),
        path,
        message,
    };
    let validator = jsonschema::validator_for(&skill.args_schema).map_err(|e| {
        invalid(
            String::new(),
            format!("the announced schema does not compile: {e}"),
        )
    })?;
    validator
        .validate(args)
        .map_err(|e| invalid(e.instance_path().as_str().to_string(), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::SkillError;

    #[test]
    fn an_announced_schema_checks_arguments_as_the_registry_does() {
        let view = crate::protocol::SkillView {
            name: "mcp.time.get_current_time".into(),
            description: String::new(),
            args_schema: serde_json::json!({
                "type": "object",
                "properties": {"timezone": {"type": "string"}},
                "required": ["timezone"]
            }),
            risk: crate::protocol::Risk::Read,
        };
        assert!(super::check_announced(&view, &serde_json::json!({"timezone": "UTC"})).is_ok());
        let err = super::check_announced(&view, &serde_json::json!({"timezone": 3})).unwrap_err();
        assert!(
            matches!(&err, SkillError::InvalidArgs { skill, path, .. }
                if skill == "mcp.time.get_current_time" && path == "/timezone"),
            "{err}"
        );
    }
}
