//! Loop guards (seed 003 §11.2): an iteration cap and a cap on consecutive
//! failures of one skill. When one trips, the kernel — not the brain — asks
//! the operator.

use crate::config::KernelConfig;
use crate::react::Observation;

/// Why the loop must stop and ask, if a guard trips before the iteration
/// `obs` is for.
pub fn tripped(obs: &Observation, config: &KernelConfig) -> Option<String> {
    if obs.iteration > config.max_iterations {
        return Some(format!(
            "iteration cap reached: {} iterations without finishing {}",
            config.max_iterations, obs.title
        ));
    }
    let step = obs.current_step()?;
    let failures = obs.failures;
    (failures >= config.max_skill_failures).then(|| {
        format!(
            "{} failed {failures} times in a row (cap {})",
            step.skill, config.max_skill_failures
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::react::observation::sample;

    #[test]
    fn caps_trip_at_their_limits() {
        let config = KernelConfig {
            max_iterations: 3,
            max_skill_failures: 2,
            ..KernelConfig::default()
        };
        let mut obs = sample();
        obs.iteration = 3;
        assert_eq!(tripped(&obs, &config), None);
        obs.iteration = 4;
        assert_eq!(
            tripped(&obs, &config).unwrap(),
            "iteration cap reached: 3 iterations without finishing go to kitchen"
        );
        obs.iteration = 1;
        obs.failures = 1;
        assert_eq!(tripped(&obs, &config), None);
        obs.failures = 2;
        assert_eq!(
            tripped(&obs, &config).unwrap(),
            "navigate_to failed 2 times in a row (cap 2)"
        );
        // No step left: nothing to have failed.
        obs.plan.clear();
        assert_eq!(tripped(&obs, &config), None);
    }
}
