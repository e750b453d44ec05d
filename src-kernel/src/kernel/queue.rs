//! The priority task queue (seed 003 K5, §8): safety > battery > user
//! interrupt > main task > background; equal priorities run in arrival order.

use serde::{Deserialize, Serialize};

use super::task::{Task, TaskKind};
use crate::protocol::{Priority, TaskView};

/// Finished tasks kept for faces to show.
const KEEP_FINISHED: usize = 20;

/// Every task not yet forgotten and which one is active.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskQueue {
    tasks: Vec<Task>,
    active: Option<String>,
    next_id: u64,
}

impl TaskQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a task and returns its id.
    pub fn push(&mut self, kind: TaskKind, priority: Priority, now: f64) -> String {
        self.next_id += 1;
        let id = format!("t{}", self.next_id);
        self.tasks.push(Task::new(id.clone(), kind, priority, now));
        self.forget_old();
        id
    }

    /// The active task's id.
    pub fn active_id(&self) -> Option<&str> {
        self.active.as_deref()
    }

    /// The active task.
    pub fn active(&self) -> Option<&Task> {
        self.active.as_deref().and_then(|id| self.get(id))
    }

    /// The active task, mutably.
    pub fn active_mut(&mut self) -> Option<&mut Task> {
        let id = self.active.clone()?;
        self.get_mut(&id)
    }

    /// Makes `id` the active task (or none).
    pub fn set_active(&mut self, id: Option<String>) {
        self.active = id;
    }

    /// The task called `id`.
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// The task called `id`, mutably.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// The runnable task that should run now: highest priority, then oldest.
    pub fn best_runnable(&self) -> Option<&Task> {
        self.tasks
            .iter()
            .filter(|t| t.is_runnable())
            .max_by(|a, b| {
                a.priority
                    .cmp(&b.priority)
                    .then(b.created_at.total_cmp(&a.created_at))
            })
    }

    /// Whether any unfinished task is a charge task.
    pub fn has_charge_task(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| t.kind == TaskKind::Charge && !t.status.is_terminal())
    }

    /// Every task, oldest first.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Takes the tasks out, leaving the queue's other fields: the durable
    /// engine serialises the rest of the state without them and the tasks
    /// that changed on their own. Put them back with [`TaskQueue::put_tasks`].
    pub fn take_tasks(&mut self) -> Vec<Task> {
        std::mem::take(&mut self.tasks)
    }

    /// Puts back what [`TaskQueue::take_tasks`] took.
    pub fn put_tasks(&mut self, tasks: Vec<Task>) {
        self.tasks = tasks;
    }

    /// Unfinished tasks first (active, then by priority), then finished ones, newest first.
    pub fn views(&self) -> Vec<TaskView> {
        let mut open: Vec<&Task> = self
            .tasks
            .iter()
            .filter(|t| !t.status.is_terminal())
            .collect();
        open.sort_by(|a, b| {
            let act = |t: &Task| Some(t.id.as_str()) == self.active.as_deref();
            act(b)
                .cmp(&act(a))
                .then(b.priority.cmp(&a.priority))
                .then(a.created_at.total_cmp(&b.created_at))
        });
        let done = self.tasks.iter().rev().filter(|t| t.status.is_terminal());
        open.into_iter().chain(done).map(Task::view).collect()
    }

    /// The newest task.
    pub fn last(&self) -> Option<&Task> {
        self.tasks.last()
    }

    fn forget_old(&mut self) {
        let finished = self.tasks.iter().filter(|t| t.status.is_terminal()).count();
        let mut excess = finished.saturating_sub(KEEP_FINISHED);
        self.tasks.retain(|t| {
            if excess > 0 && t.status.is_terminal() {
                excess -= 1;
                false
            } else {
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TaskStatus;

    fn goto(zone: &str) -> TaskKind {
        TaskKind::Goto { zone: zone.into() }
    }

    #[test]
    fn higher_priority_wins_then_arrival_order() {
        let mut q = TaskQueue::new();
        let a = q.push(goto("kitchen"), Priority::Main, 0.0);
        let b = q.push(goto("bedroom"), Priority::Main, 1.0);
        assert_eq!(q.best_runnable().unwrap().id, a);
        let c = q.push(TaskKind::Charge, Priority::Battery, 2.0);
        assert_eq!(q.best_runnable().unwrap().id, c);
        q.get_mut(&c).unwrap().status = TaskStatus::Succeeded;
        q.get_mut(&a).unwrap().status = TaskStatus::Cancelled;
        assert_eq!(q.best_runnable().unwrap().id, b);
        assert!(!q.has_charge_task());
    }

    #[test]
    fn paused_and_waiting_tasks_are_not_runnable() {
        let mut q = TaskQueue::new();
        let a = q.push(goto("kitchen"), Priority::Main, 0.0);
        q.get_mut(&a).unwrap().status = TaskStatus::Paused;
        assert!(q.best_runnable().is_none());
        q.get_mut(&a).unwrap().status = TaskStatus::WaitingHuman;
        assert!(q.best_runnable().is_none());
    }

    #[test]
    fn the_active_task_is_found_by_its_id() {
        let mut q = TaskQueue::new();
        assert!(q.active().is_none() && q.active_id().is_none() && q.last().is_none());
        let a = q.push(goto("kitchen"), Priority::Main, 0.0);
        let b = q.push(goto("bedroom"), Priority::Main, 1.0);
        assert_eq!((a.as_str(), b.as_str()), ("t1", "t2"));
        q.set_active(Some(b.clone()));
        assert_eq!(q.active_id(), Some("t2"));
        assert_eq!(q.active().unwrap().id, b);
        q.active_mut().unwrap().status = TaskStatus::Running;
        assert_eq!(q.get(&b).unwrap().status, TaskStatus::Running);
        assert_eq!(q.last().unwrap().id, b);
        assert_eq!(q.tasks().len(), 2);
        q.set_active(None);
        assert!(q.active_mut().is_none());
    }

    #[test]
    fn an_unfinished_charge_task_counts_and_a_finished_one_does_not() {
        let mut q = TaskQueue::new();
        let c = q.push(TaskKind::Charge, Priority::Battery, 0.0);
        assert!(q.has_charge_task());
        q.get_mut(&c).unwrap().status = TaskStatus::Running;
        assert!(q.has_charge_task());
        q.get_mut(&c).unwrap().status = TaskStatus::Aborted;
        assert!(!q.has_charge_task());
        q.push(goto("kitchen"), Priority::Main, 1.0);
        assert!(!q.has_charge_task());
    }

    #[test]
    fn equal_priorities_run_oldest_first_and_preempted_tasks_may_run_again() {
        let mut q = TaskQueue::new();
        let late = q.push(goto("kitchen"), Priority::Main, 5.0);
        let early = q.push(goto("bedroom"), Priority::Main, 1.0);
        assert_eq!(q.best_runnable().unwrap().id, early);
        q.get_mut(&early).unwrap().status = TaskStatus::Preempted;
        assert_eq!(q.best_runnable().unwrap().id, early);
        q.get_mut(&early).unwrap().status = TaskStatus::Succeeded;
        assert_eq!(q.best_runnable().unwrap().id, late);
    }

    #[test]
    fn the_queue_forgets_the_oldest_finished_tasks_beyond_twenty() {
        let mut q = TaskQueue::new();
        let open = q.push(goto("kitchen"), Priority::Main, 0.0);
        for i in 0..25 {
            let id = q.push(goto("bedroom"), Priority::Main, f64::from(i));
            q.get_mut(&id).unwrap().status = TaskStatus::Succeeded;
        }
        // The last push saw 24 finished (its own task was still queued).
        assert_eq!(q.tasks().len(), 1 + 21);
        q.push(goto("study"), Priority::Main, 30.0);
        let finished = q.tasks().iter().filter(|t| t.status.is_terminal()).count();
        assert_eq!(finished, KEEP_FINISHED);
        // The open task and the newest finished ones stay, oldest first.
        assert_eq!(q.tasks()[0].id, open);
        assert_eq!(q.tasks()[1].id, "t7");
        assert_eq!(q.last().unwrap().id, "t27");
    }

    #[test]
    fn views_show_the_active_task_then_priority_then_age_then_the_finished_newest_first() {
        let mut q = TaskQueue::new();
        let old = q.push(goto("kitchen"), Priority::Main, 0.0);
        let young = q.push(goto("bedroom"), Priority::Main, 1.0);
        let urgent = q.push(goto("study"), Priority::UserInterrupt, 2.0);
        let done1 = q.push(goto("hall"), Priority::Main, 3.0);
        let done2 = q.push(goto("hall"), Priority::Main, 4.0);
        q.get_mut(&done1).unwrap().status = TaskStatus::Succeeded;
        q.get_mut(&done2).unwrap().status = TaskStatus::Cancelled;
        q.set_active(Some(young.clone()));
        let ids: Vec<String> = q.views().into_iter().map(|v| v.id).collect();
        assert_eq!(ids, [young, urgent, old, done2, done1]);
    }
}
