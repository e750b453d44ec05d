//! One registry for what the seeds call actions, tools and skills.

pub mod spec;

pub use spec::{MainType, Recovery, Risk, SkillSpec, SubType};
