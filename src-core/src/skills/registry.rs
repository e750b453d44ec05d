//! The registry: skills by name, each with its compiled args validator.

use serde_json::Value;

use super::{Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::sim::World;

struct Entry {
    validator: jsonschema::Validator,
    skill: Box<dyn Skill>,
}

/// Every registered skill, in registration order.
#[derive(Default)]
pub struct SkillRegistry {
    entries: Vec<Entry>,
}

impl SkillRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry with the built-in skills (`navigate_to`, `stop_base`, `dock`, `speak`).
    pub fn with_builtins() -> Result<Self, SkillError> {
        let mut r = Self::new();
        for skill in super::builtin::all() {
            r.register(skill, &Value::Null)?;
        }
        Ok(r)
    }

    /// Initializes and registers a skill.
    pub fn register(
        &mut self,
        mut skill: Box<dyn Skill>,
        config: &Value,
    ) -> Result<(), SkillError> {
        let name = skill.spec().name.clone();
        if self.position(&name).is_some() {
            return Err(SkillError::Duplicate(name));
        }
        let validator = jsonschema::validator_for(&skill.spec().args_schema).map_err(|e| {
            SkillError::BadSchema {
                skill: name.clone(),
                message: e.to_string(),
            }
        })?;
        skill.initialize(config)?;
        self.entries.push(Entry { validator, skill });
        Ok(())
    }

    /// Cleans up and removes a skill; returns whether it was registered.
    pub fn unregister(&mut self, name: &str) -> bool {
        match self.position(name) {
            Some(i) => {
                let mut entry = self.entries.remove(i);
                entry.skill.cleanup();
                true
            }
            None => false,
        }
    }

    /// Ends of goals the skills run away from the robot link (see [`Skill::poll`]).
    pub fn poll(&mut self, out: &mut Vec<(String, super::runner::GoalResult)>) {
        for entry in &mut self.entries {
            entry.skill.poll(out);
        }
    }

    /// Cleans up every skill (shutdown).
    pub fn cleanup_all(&mut self) {
        for entry in &mut self.entries {
            entry.skill.cleanup();
        }
    }

    /// The spec of `name`.
    pub fn spec(&self, name: &str) -> Option<&SkillSpec> {
        self.position(name).map(|i| self.entries[i].skill.spec())
    }

    /// Every spec, in registration order.
    pub fn specs(&self) -> impl Iterator<Item = &SkillSpec> {
        self.entries.iter().map(|e| e.skill.spec())
    }

    /// Checks `args` against the schema and the skill's own checks.
    pub fn check(&self, name: &str, args: &Value, world: &World) -> Result<&SkillSpec, SkillError> {
        let i = self
            .position(name)
            .ok_or_else(|| SkillError::Unknown(name.to_string()))?;
        let entry = &self.entries[i];
        if let Err(e) = entry.validator.validate(args) {
            return Err(SkillError::InvalidArgs {
                skill: name.to_string(),
                path: e.instance_path().as_str().to_string(),
                message: e.to_string(),
            });
        }
        entry.skill.check(args, world)?;
        Ok(entry.skill.spec())
    }

    /// Starts a goal of `name` (arguments must have been checked).
    pub fn start(
        &mut self,
        name: &str,
        goal_id: &str,
        args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let i = self
            .position(name)
            .ok_or_else(|| SkillError::Unknown(name.to_string()))?;
        self.entries[i].skill.start(goal_id, args, ctx)
    }

    /// Cancels a goal of `name`.
    pub fn cancel(
        &mut self,
        name: &str,
        goal_id: &str,
        ctx: &mut SkillContext<'_>,
    ) -> Result<(), SkillError> {
        let i = self
            .position(name)
            .ok_or_else(|| SkillError::Unknown(name.to_string()))?;
        self.entries[i].skill.cancel(goal_id, ctx)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.skill.spec().name == name)
    }
}
