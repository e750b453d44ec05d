//! Loop guards (seed 003 §11.2): an iteration cap and a cap on consecutive
//! failures of one skill. When one trips, the kernel — not the brain — asks
//! the operator.

use crate::config::KernelConfig;
use crate::kernel::Task;

/// Why the loop must stop and ask, if a guard trips before iteration `iteration`.
pub fn tripped(task: &Task, iteration: u32, config: &KernelConfig) -> Option<String> {
    if iteration > config.max_iterations {
        return Some(format!(
            "iteration cap reached: {} iterations without finishing {}",
            config.max_iterations,
            task.title()
        ));
    }
    let step = task.current_step()?;
    let failures = task.failures.get(&step.skill).copied().unwrap_or(0);
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
    use crate::kernel::TaskKind;
    use crate::protocol::Priority;

    /// Caps of 3 iterations and 2 failures of one skill, and a task under them.
    fn capped_goto() -> (KernelConfig, Task) {
        let config = KernelConfig {
            max_iterations: 3,
            max_skill_failures: 2,
            ..KernelConfig::default()
        };
        let task = Task::new(
            "t1".into(),
            TaskKind::Goto {
                zone: "kitchen".into(),
            },
            Priority::Main,
            0.0,
        );
        (config, task)
    }

    #[test]
    fn caps_trip_at_their_limits() {
        let (config, mut t) = capped_goto();
        assert_eq!(tripped(&t, 3, &config), None);
        assert!(
            tripped(&t, 4, &config)
                .unwrap()
                .starts_with("iteration cap reached")
        );
        t.failures.insert("navigate_to".into(), 2);
        assert_eq!(
            tripped(&t, 1, &config).unwrap(),
            "navigate_to failed 2 times in a row (cap 2)"
        );
    }

    #[test]
    fn below_their_limits_the_caps_stay_quiet() {
        let (config, mut t) = capped_goto();
        t.failures.insert("navigate_to".into(), 1);
        assert_eq!(tripped(&t, 1, &config), None);
        // Failures of another skill do not count against this step's.
        t.failures.insert("watch".into(), 5);
        assert_eq!(tripped(&t, 1, &config), None);
        assert_eq!(
            tripped(&t, 4, &config).unwrap(),
            "iteration cap reached: 3 iterations without finishing go to kitchen"
        );
    }
}
