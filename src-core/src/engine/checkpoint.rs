//! The checkpoint kept up to date tick by tick instead of rebuilt.
//!
//! A checkpoint is `{"state": KernelState, "runner": SkillRunner, "home":
//! DeviceWorld::durable()}` as JSON, and each tick's is stored as the delta
//! from the last one ([`delta`]). Turning the whole state into a `Value`
//! and diffing it every tick cost a third of a durable tick's CPU
//! (docs/benchmarks/durable.md), most of it on what a tick does not touch:
//! the finished tasks the queue keeps for the faces, and the home's
//! devices. So [`Checkpoint`] keeps the last checkpoint's value, a copy of
//! the tasks it was made from and the home's revision, and per tick
//!
//! - serialises the state without its tasks (the queue's other fields,
//!   telemetry, approvals, timers…) and the running goals, and diffs that;
//! - compares each task with its copy (`Task: PartialEq`, a struct
//!   comparison, no JSON) and serialises and diffs only the ones that
//!   differ, plus those appended; tasks dropped from the queue's front are
//!   one `^N` pair, as [`delta::diff`] writes them;
//! - rebuilds the home's part only when its revision moved.
//!
//! The pairs, applied to the last checkpoint, give exactly the value built
//! from the whole state (the tests below check it over random sequences of
//! changes), and every full checkpoint is still built from the whole state
//! and starts the copies afresh, so the incremental value never drifts
//! further than `full_every` commits; debug builds also compare the two
//! there.

use serde_json::{Value, json};

use super::KernelState;
use crate::devices::DeviceWorld;
use crate::kernel::task::Task;
use crate::skills::runner::SkillRunner;
use crate::store::delta;

/// Where the tasks sit in a checkpoint.
const TASKS: &str = "/state/queue/tasks";

/// The parts of a checkpoint a tick reads.
pub(crate) struct Parts<'a> {
    /// The kernel state; its tasks are taken out and put back while the
    /// rest is serialised.
    pub state: &'a mut KernelState,
    /// The running goals.
    pub runner: &'a SkillRunner,
    /// The home.
    pub home: &'a DeviceWorld,
}

impl Parts<'_> {
    /// The whole checkpoint, built from scratch.
    pub(super) fn value(&self) -> Value {
        whole(self.state, self.runner, self.home)
    }
}

/// The whole checkpoint of `state`, `runner` and `home`, built from scratch.
pub(crate) fn whole(state: &KernelState, runner: &SkillRunner, home: &DeviceWorld) -> Value {
    json!({"state": state, "runner": runner, "home": home.durable()})
}

/// The last checkpoint written and what it was made from.
#[derive(Debug, Clone)]
pub(crate) struct Checkpoint {
    /// The checkpoint as a resume would rebuild it.
    value: Value,
    /// The queue's tasks as `value` holds them, in the same order.
    tasks: Vec<Task>,
    /// The home's revision when `value`'s home part was built.
    home: u64,
}

impl Checkpoint {
    /// Starts from a checkpoint built from the whole state (`parts.value()`).
    pub(super) fn new(value: Value, parts: &Parts<'_>) -> Self {
        Self {
            value,
            tasks: parts.state.queue.tasks().to_vec(),
            home: parts.home.revision(),
        }
    }

    /// The last checkpoint.
    #[cfg(test)]
    pub(super) fn value(&self) -> &Value {
        &self.value
    }

    /// The changes from the last checkpoint to `parts` (empty when nothing
    /// changed), as [`delta::diff`] pairs; the checkpoint becomes `parts`'.
    pub(super) fn advance(&mut self, parts: &mut Parts<'_>) -> Vec<(String, Value)> {
        let in_step = matches!(self.value.pointer(TASKS), Some(Value::Array(a)) if a.len() == self.tasks.len());
        if !in_step {
            return self.rebuild(parts);
        }
        let home_moved = parts.home.revision() != self.home || self.value.get("home").is_none();
        // The state without its tasks: both sides hold an empty array there,
        // and `null` for the home when it has not moved.
        let tasks = parts.state.queue.take_tasks();
        let rest = json!({
            "state": &*parts.state,
            "runner": parts.runner,
            "home": if home_moved { parts.home.durable() } else { Value::Null },
        });
        parts.state.queue.put_tasks(tasks);
        let empty = |t: &mut Value| std::mem::replace(t, Value::Array(Vec::new()));
        let mut values = match self.value.pointer_mut(TASKS).map(empty) {
            Some(Value::Array(values)) => values,
            _ => Vec::new(),
        };
        let kept_home = if home_moved {
            None
        } else {
            self.value.get_mut("home").map(Value::take)
        };
        let mut out = Vec::new();
        delta::diff_at(&self.value, &rest, "", &mut out);
        // A pair at or above the tasks (or the home left out as `null`)
        // would carry the placeholder, not the value: diff the whole.
        let above = |p: &str, at: &str| {
            at.strip_prefix(p)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'))
        };
        let placeholder = out
            .iter()
            .any(|(p, _)| above(p, TASKS) || (kept_home.is_some() && above(p, "/home")));
        if placeholder {
            if let Some(slot) = self.value.pointer_mut(TASKS) {
                *slot = Value::Array(values);
            }
            put_home(&mut self.value, kept_home);
            return self.rebuild(parts);
        }
        self.value = rest;
        if kept_home.is_none() {
            self.home = parts.home.revision();
        }
        put_home(&mut self.value, kept_home);
        self.tasks_delta(parts.state.queue.tasks(), &mut values, &mut out);
        if let Some(slot) = self.value.pointer_mut(TASKS) {
            *slot = Value::Array(values);
        }
        out
    }

    /// Debug builds, at each full checkpoint: the incremental way from the
    /// last checkpoint to `parts` must give `fresh`, the value built from
    /// the whole state, both as kept and as a resume applies the pairs.
    #[cfg(debug_assertions)]
    pub(super) fn check(&self, parts: &mut Parts<'_>, fresh: &Value) {
        let mut kept = self.clone();
        let changes = kept.advance(parts);
        let mut applied = self.value.clone();
        let rebuilt = delta::apply(&mut applied, &changes);
        debug_assert!(
            rebuilt.is_ok() && applied == *fresh && kept.value == *fresh,
            "the incremental checkpoint drifted from the whole state: {rebuilt:?}, {changes:?}"
        );
    }

    /// The tasks' pairs: `values` and `self.tasks` (the old ones) become
    /// `new`'s.
    fn tasks_delta(
        &mut self,
        new: &[Task],
        values: &mut Vec<Value>,
        out: &mut Vec<(String, Value)>,
    ) {
        // Finished tasks forgotten from the front: where the first task now
        // was before (task ids are unique).
        let dropped = new
            .first()
            .and_then(|first| self.tasks.iter().position(|t| t.id == first.id))
            .unwrap_or(0);
        if self.tasks.len() - dropped > new.len() {
            // Tasks left from the middle or the back: the array is rewritten.
            *values = new.iter().map(to_value).collect();
            self.tasks = new.to_vec();
            out.push((TASKS.to_string(), Value::Array(values.clone())));
            return;
        }
        if dropped > 0 {
            out.push((format!("{TASKS}/^{dropped}"), Value::Null));
            values.drain(..dropped);
            self.tasks.drain(..dropped);
        }
        for (i, task) in new.iter().enumerate() {
            match self.tasks.get(i) {
                Some(old) if old == task => {}
                Some(_) => {
                    let value = to_value(task);
                    delta::diff_at(&values[i], &value, &format!("{TASKS}/{i}"), out);
                    values[i] = value;
                    self.tasks[i] = task.clone();
                }
                None => {
                    let value = to_value(task);
                    out.push((format!("{TASKS}/-"), value.clone()));
                    values.push(value);
                    self.tasks.push(task.clone());
                }
            }
        }
    }

    /// The changes when the shortcut does not fit (the shape of the state
    /// changed above the tasks): the whole value, diffed.
    fn rebuild(&mut self, parts: &Parts<'_>) -> Vec<(String, Value)> {
        let value = parts.value();
        let out = delta::diff(&self.value, &value);
        *self = Self::new(value, parts);
        out
    }
}

/// Puts back a home taken out of a checkpoint value.
fn put_home(value: &mut Value, home: Option<Value>) {
    if let (Some(home), Some(object)) = (home, value.as_object_mut()) {
        object.insert("home".into(), home);
    }
}

fn to_value(task: &Task) -> Value {
    serde_json::to_value(task).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::task::TaskKind;
    use crate::protocol::{Priority, TaskStatus};
    use crate::rng::SplitMix64;

    struct World {
        state: KernelState,
        runner: SkillRunner,
        home: DeviceWorld,
    }

    impl World {
        fn new() -> Self {
            Self {
                state: KernelState::default(),
                runner: SkillRunner::new(),
                home: DeviceWorld::builtin().unwrap(),
            }
        }

        fn parts(&mut self) -> Parts<'_> {
            Parts {
                state: &mut self.state,
                runner: &self.runner,
                home: &self.home,
            }
        }

        fn whole(&self) -> Value {
            whole(&self.state, &self.runner, &self.home)
        }

        /// One random change of the kind a tick makes.
        fn change(&mut self, rng: &mut SplitMix64) {
            let zones = ["kitchen", "bedroom", "living_room"];
            let n = self.state.queue.tasks().len();
            match rng.below(9) {
                0 | 1 => {
                    let kind = TaskKind::Goto {
                        zone: zones[rng.below(zones.len())].into(),
                    };
                    self.state.queue.push(kind, Priority::Main, self.state.time);
                }
                2 | 3 if n > 0 => {
                    let id = self.state.queue.tasks()[rng.below(n)].id.clone();
                    let task = self.state.queue.get_mut(&id).unwrap();
                    task.cursor += 1;
                    task.react.iteration += 1;
                    task.status = TaskStatus::Running;
                }
                4 if n > 0 => {
                    let id = self.state.queue.tasks()[rng.below(n)].id.clone();
                    let task = self.state.queue.get_mut(&id).unwrap();
                    task.status = [
                        TaskStatus::Succeeded,
                        TaskStatus::Aborted,
                        TaskStatus::Cancelled,
                    ][rng.below(3)];
                }
                5 => {
                    let devices = self.home.devices();
                    let d = &devices[rng.below(devices.len())];
                    let (id, online) = (d.id.clone(), !d.online);
                    self.home.set_online(&id, online).unwrap();
                }
                6 => {
                    let key = format!("k{}", rng.below(3));
                    self.state.shared.insert(key, json!(rng.below(100)));
                }
                7 => self.state.mode_reason = format!("reason {}", rng.below(5)),
                _ => {}
            }
            self.state.time += 0.1;
            self.state.step += 1;
        }
    }

    /// After random sequences of task, home and state changes, the
    /// incrementally kept checkpoint equals the one built from the whole
    /// state, and so does the last one with the pairs applied (a resume).
    #[test]
    fn an_incremental_checkpoint_equals_the_one_built_from_the_whole_state() {
        for seed in 0..12 {
            let mut rng = SplitMix64::new(seed);
            let mut world = World::new();
            let mut checkpoint = Checkpoint::new(world.whole(), &world.parts());
            let mut resumed = world.whole();
            for tick in 0..200 {
                for _ in 0..=rng.below(3) {
                    world.change(&mut rng);
                }
                let changes = checkpoint.advance(&mut world.parts());
                let whole = world.whole();
                assert_eq!(checkpoint.value(), &whole, "seed {seed}, tick {tick}");
                delta::apply(&mut resumed, &changes).unwrap();
                assert_eq!(resumed, whole, "seed {seed}, tick {tick}: {changes:?}");
                assert_eq!(
                    checkpoint.tasks,
                    world.state.queue.tasks(),
                    "seed {seed}, tick {tick}"
                );
            }
            assert!(
                world.state.queue.tasks().len() > 20,
                "the queue forgot tasks (seed {seed})"
            );
        }
    }

    /// What did not change is not in the delta: one task moved, one pair
    /// under it; the home not moved, nothing under `/home`.
    #[test]
    fn only_what_changed_is_serialised_again() {
        let mut world = World::new();
        for zone in ["kitchen", "bedroom", "kitchen"] {
            let kind = TaskKind::Goto { zone: zone.into() };
            world.state.queue.push(kind, Priority::Main, 0.0);
        }
        let mut checkpoint = Checkpoint::new(world.whole(), &world.parts());
        assert!(checkpoint.advance(&mut world.parts()).is_empty());
        world.state.queue.get_mut("t2").unwrap().cursor = 1;
        assert_eq!(
            checkpoint.advance(&mut world.parts()),
            vec![("/state/queue/tasks/1/cursor".to_string(), json!(1))]
        );
        world.home.set_online("living_room_light", false).unwrap();
        let changes = checkpoint.advance(&mut world.parts());
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(changes[0].0.starts_with("/home/states/living_room_light"));
    }

    /// A last checkpoint of another shape is diffed whole.
    #[test]
    fn a_checkpoint_of_another_shape_is_diffed_whole() {
        let mut world = World::new();
        world
            .state
            .queue
            .push(TaskKind::Charge, Priority::Battery, 0.0);
        let mut checkpoint = Checkpoint::new(json!({"state": {}}), &world.parts());
        let changes = checkpoint.advance(&mut world.parts());
        let mut rebuilt = json!({"state": {}});
        delta::apply(&mut rebuilt, &changes).unwrap();
        assert_eq!(rebuilt, world.whole());
        assert_eq!(checkpoint.value(), &world.whole());
    }
}
