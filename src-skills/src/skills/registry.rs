//! The registry: skills by name, each with its compiled args validator.

use serde_json::Value;

use super::{Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::world::World;

struct Entry {
    validator: jsonschema::Validator,
    skill: Box<dyn Skill>,
    /// The configuration `initialize` gets.
    config: Value,
    /// Whether `initialize` ran (and `cleanup` is owed).
    initialized: bool,
}

/// When a skill is initialised (seed 000 §8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// At registration.
    Preloaded,
    /// On first use (a check or a start).
    Lazy,
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

    /// The registry with the built-in skills (`navigate_to`, `stop_base`,
    /// `dock`, `speak`, `watch`, `alert`), preloaded, unconfigured.
    pub fn with_builtins() -> Result<Self, SkillError> {
        Self::with_skills(super::builtin::all(), &Value::Null, &[])
    }

    /// `skills`, each initialised with `configs[<name>]` (null when absent),
    /// the ones named in `lazy` on first use.
    pub fn with_skills(
        skills: Vec<Box<dyn Skill>>,
        configs: &Value,
        lazy: &[String],
    ) -> Result<Self, SkillError> {
        let mut r = Self::new();
        for skill in skills {
            let name = skill.spec().name.clone();
            let config = configs.get(&name).cloned().unwrap_or(Value::Null);
            let init = if lazy.contains(&name) {
                Init::Lazy
            } else {
                Init::Preloaded
            };
            r.register_with(skill, config, init)?;
        }
        Ok(r)
    }

    /// Initializes and registers a skill.
    pub fn register(&mut self, skill: Box<dyn Skill>, config: &Value) -> Result<(), SkillError> {
        self.register_with(skill, config.clone(), Init::Preloaded)
    }

    /// Registers a skill, initialised now or on first use.
    pub fn register_with(
        &mut self,
        mut skill: Box<dyn Skill>,
        config: Value,
        init: Init,
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
        let initialized = init == Init::Preloaded;
        if initialized {
            skill.initialize(&config)?;
        }
        self.entries.push(Entry {
            validator,
            skill,
            config,
            initialized,
        });
        Ok(())
    }

    /// Whether `name` is registered and initialised.
    pub fn is_initialized(&self, name: &str) -> bool {
        self.position(name)
            .is_some_and(|i| self.entries[i].initialized)
    }

    /// Initialises a lazy skill before its first use.
    fn ready(&mut self, i: usize) -> Result<(), SkillError> {
        let entry = &mut self.entries[i];
        if !entry.initialized {
            entry.skill.initialize(&entry.config)?;
            entry.initialized = true;
        }
        Ok(())
    }

    /// Cleans up and removes a skill; returns whether it was registered.
    pub fn unregister(&mut self, name: &str) -> bool {
        match self.position(name) {
            Some(i) => {
                let mut entry = self.entries.remove(i);
                if entry.initialized {
                    entry.skill.cleanup();
                }
                true
            }
            None => false,
        }
    }

    /// Results of goals that ended off the robot since the last poll.
    pub fn poll_all(&mut self) -> Vec<(String, super::runner::GoalResult)> {
        let mut done = Vec::new();
        for entry in self.entries.iter_mut().filter(|e| e.initialized) {
            entry.skill.poll(&mut done);
        }
        done
    }

    /// Whether any skill works on a goal off the robot.
    pub fn is_waiting(&self) -> bool {
        self.entries
            .iter()
            .any(|e| e.initialized && e.skill.is_waiting())
    }

    /// Cleans up every initialised skill (shutdown); each is cleaned up once
    /// and initialised again if used afterwards.
    pub fn cleanup_all(&mut self) {
        for entry in self.entries.iter_mut().filter(|e| e.initialized) {
            entry.skill.cleanup();
            entry.initialized = false;
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

    /// Where a goal of `name` with `args` (already checked) sends the base;
    /// `None` for an unknown skill.
    pub fn motion(&self, name: &str, args: &Value, world: &World) -> Option<super::Motion> {
        self.position(name)
            .map(|i| self.entries[i].skill.motion(args, world))
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
        self.ready(i)?;
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::link::{Outbox, Telemetry};

    /// Counts its life-cycle calls.
    struct Counted {
        spec: SkillSpec,
        inits: Arc<AtomicUsize>,
        cleanups: Arc<AtomicUsize>,
    }

    impl Skill for Counted {
        fn spec(&self) -> &SkillSpec {
            &self.spec
        }
        fn initialize(&mut self, config: &Value) -> Result<(), SkillError> {
            assert_eq!(config, &json!({"greeting": "hi"}));
            self.inits.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn start(
            &mut self,
            _: &str,
            _: &Value,
            _: &mut SkillContext<'_>,
        ) -> Result<Started, SkillError> {
            Ok(Started::Done(json!({})))
        }
        fn cleanup(&mut self) {
            self.cleanups.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn lazy_skills_start_on_first_use_and_every_skill_is_cleaned_up_once() {
        let (inits, cleanups) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut spec = SkillRegistry::with_builtins()
            .unwrap()
            .spec("speak")
            .unwrap()
            .clone();
        spec.name = "counted".into();
        let mut registry = SkillRegistry::with_builtins().unwrap();
        let skill = Counted {
            spec,
            inits: inits.clone(),
            cleanups: cleanups.clone(),
        };
        registry
            .register_with(Box::new(skill), json!({"greeting": "hi"}), Init::Lazy)
            .unwrap();
        assert!(!registry.is_initialized("counted"));
        assert_eq!(inits.load(Ordering::SeqCst), 0);
        let world = World::builtin("apartment").unwrap();
        let (mut outbox, telemetry, mut speech) =
            (Outbox::default(), Telemetry::default(), Vec::new());
        let mut ctx = SkillContext {
            world: &world,
            link: &mut outbox,
            telemetry: &telemetry,
            speech: &mut speech,
        };
        for goal in ["g1", "g2"] {
            registry
                .start("counted", goal, &json!({"text": "x"}), &mut ctx)
                .unwrap();
        }
        assert_eq!(
            inits.load(Ordering::SeqCst),
            1,
            "initialised once, on first use"
        );
        registry.cleanup_all();
        registry.cleanup_all();
        assert_eq!(cleanups.load(Ordering::SeqCst), 1, "cleaned up once");
        assert!(registry.unregister("counted"));
        assert_eq!(
            cleanups.load(Ordering::SeqCst),
            1,
            "not cleaned up again: it was not in use"
        );
        assert!(registry.spec("counted").is_none());
    }
}
