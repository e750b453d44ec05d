//! Which ops need an operator's approval. The policy — never a model —
//! decides; its rules come from config (`[policy]`).

use serde_json::Value;

use crate::config::PolicyConfig;
use crate::sim::World;
use crate::skills::SkillSpec;

/// Why `skill` with `args` needs approval under `policy`, or `None` if it may run.
pub fn approval_reason(
    policy: &PolicyConfig,
    spec: &SkillSpec,
    args: &Value,
    world: &World,
) -> Option<String> {
    if policy.approve_risks.contains(&spec.risk) {
        return Some(format!("{} is {} risk", spec.name, spec.risk.as_str()));
    }
    let zone = args
        .get("zone")
        .and_then(Value::as_str)
        .and_then(|z| world.zone(z))?;
    if zone.outside && policy.approve_outside {
        return Some(format!(
            "{} leaves the apartment ({})",
            spec.name, zone.name
        ));
    }
    if zone.restricted && policy.approve_restricted {
        return Some(format!(
            "{} enters the restricted zone {}",
            spec.name, zone.name
        ));
    }
    None
}
