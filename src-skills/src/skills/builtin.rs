//! The built-in skills: moving the base, speaking, looking, alerting and
//! telling an outside alert service.

mod alert;
mod base_goal;
mod listen;
mod navigate;
mod notify;
mod speak;
mod watch;

use serde_json::Value;

use super::{MainType, Recovery, Risk, Skill, SkillContext, SkillError, SkillSpec, SubType};
use crate::link::LinkRequest;

pub use alert::Alert;
pub use base_goal::BaseGoal;
pub use listen::Listen;
pub use navigate::NavigateTo;
pub use notify::Notify;
pub use speak::Speak;
pub use watch::Watch;

/// `Default` is `new()` for the built-in skills.
macro_rules! default_is_new {
    ($($skill:ty),*) => {
        $(impl Default for $skill {
            fn default() -> Self {
                Self::new()
            }
        })*
    };
}

default_is_new!(NavigateTo, Speak, Watch, Alert, Listen);

/// One of each built-in skill.
pub fn all() -> Vec<Box<dyn Skill>> {
    all_with(Watch::new(), Listen::new())
}

/// One of each built-in skill, with `watch` and `listen` as given (another
/// camera, a vision model, a transcription model).
pub fn all_with(watch: Watch, listen: Listen) -> Vec<Box<dyn Skill>> {
    vec![
        Box::new(NavigateTo::new()),
        Box::new(BaseGoal::stop_base()),
        Box::new(BaseGoal::dock()),
        Box::new(Speak::new()),
        Box::new(watch),
        Box::new(Alert::new()),
        Box::new(listen),
    ]
}

/// A spec with the defaults shared by the built-ins: local, control,
/// low_write, preemptible, cancellable, version 1.0.
fn spec(name: &str, description: &str, args_schema: Value) -> SkillSpec {
    SkillSpec {
        name: name.into(),
        description: description.into(),
        args_schema,
        main_type: MainType::Local,
        sub_type: SubType::Control,
        risk: Risk::LowWrite,
        resources: Vec::new(),
        shared_resources: Vec::new(),
        preemptible: true,
        cancel_supported: true,
        timeout_s: 30.0,
        success_criteria: String::new(),
        error_map: Vec::new(),
        reply_templates: Vec::new(),
        version: "1.0".into(),
        dependencies: Vec::new(),
        capabilities: Vec::new(),
    }
}

/// Sets what every built-in declares beyond the defaults: its time limit,
/// what success means, and the capability it provides.
fn declare(spec: &mut SkillSpec, timeout_s: f64, success: &str, capability: &str) {
    spec.timeout_s = timeout_s;
    spec.success_criteria = success.into();
    spec.capabilities = vec![capability.into()];
}

/// The error map of skills that move the base (Nav2's recoveries, seed 003 §5.2).
fn motion_error_map() -> Vec<(String, Recovery)> {
    [
        ("blocked", Recovery::Replan),
        ("no_path", Recovery::Replan),
        ("timeout", Recovery::Retry),
        ("cancelled", Recovery::Retry),
        ("invalid_goal", Recovery::AskHuman),
        ("unavailable", Recovery::AskHuman),
    ]
    .into_iter()
    .map(|(c, r)| (c.to_string(), r))
    .collect()
}

/// Cancels a goal the robot runs.
fn cancel_on_robot(goal_id: &str, ctx: &mut SkillContext<'_>) -> Result<(), SkillError> {
    ctx.link.send(LinkRequest::Cancel {
        goal_id: goal_id.to_string(),
    })?;
    Ok(())
}
