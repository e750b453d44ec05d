//! Event detection and mode arbitration (seed 003 K4): hard rules, in order —
//! safety, then battery, then the queue's priorities.

use super::task::{Task, TaskKind};
use crate::protocol::{Mode, Priority, TaskStatus};

/// What K4 looks at.
#[derive(Debug, Clone, Copy)]
pub struct ArbitrationInput<'a> {
    /// An E-stop is latched.
    pub estop: bool,
    /// The robot link is up.
    pub link_up: bool,
    /// Battery percent.
    pub battery_pct: f64,
    /// CHARGE threshold.
    pub battery_low_pct: f64,
    /// An unfinished charge task exists.
    pub has_charge_task: bool,
    /// The active task.
    pub active: Option<&'a Task>,
    /// The runnable task with the highest priority.
    pub best: Option<&'a Task>,
}

/// How the active task should change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// Keep things as they are.
    Keep,
    /// Nothing runs: make this task active.
    Activate(String),
    /// Set the active task aside now, by hard rule (battery or safety).
    Preempt(String),
    /// A higher-priority user task is waiting: the ReAct loop must switch
    /// (it sees the preemption in its observation and answers SWITCH_TASK).
    UserPreempt(String),
}

/// K4's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Arbitration {
    /// The mode.
    pub mode: Mode,
    /// Why, in words.
    pub reason: String,
    /// A charge task must be queued (battery low and none exists).
    pub need_charge_task: bool,
    /// How the active task changes.
    pub switch: Switch,
}

/// Decides the mode and the active task by hard rules.
pub fn arbitrate(input: &ArbitrationInput<'_>) -> Arbitration {
    if input.estop {
        return verdict(Mode::Safe, "E-stop is latched".into(), Switch::Keep);
    }
    if !input.link_up {
        return verdict(Mode::Safe, "robot link is down".into(), Switch::Keep);
    }
    if input.battery_pct <= input.battery_low_pct && !input.has_charge_task {
        let mut a = verdict(
            Mode::Charge,
            format!(
                "battery {:.1}% ≤ {:.0}%: charging preempts other work",
                input.battery_pct, input.battery_low_pct
            ),
            Switch::Keep,
        );
        a.need_charge_task = true;
        return a;
    }
    let active = input.active.filter(|t| t.is_runnable());
    let Some(best) = input.best else {
        let reason = match input.active {
            Some(t) if t.status == TaskStatus::WaitingHuman => {
                format!("{} is waiting for the operator", t.id)
            }
            Some(t) if t.status == TaskStatus::Paused => format!("{} is paused", t.id),
            _ => "no task to run".into(),
        };
        return verdict(Mode::Idle, reason, Switch::Keep);
    };
    let switch = match active {
        None => Switch::Activate(best.id.clone()),
        Some(a) if a.id != best.id && best.priority > a.priority && a.preemptible => {
            if best.priority >= Priority::Battery {
                Switch::Preempt(best.id.clone())
            } else {
                Switch::UserPreempt(best.id.clone())
            }
        }
        Some(_) => Switch::Keep,
    };
    let running = match &switch {
        Switch::Activate(_) | Switch::Preempt(_) => best,
        Switch::Keep | Switch::UserPreempt(_) => active.unwrap_or(best),
    };
    let (mode, reason) = if running.kind == TaskKind::Charge {
        (
            Mode::Charge,
            format!("{} ({}) is running", running.id, running.title()),
        )
    } else {
        (
            Mode::Exec,
            format!("{} ({}) is running", running.id, running.title()),
        )
    };
    verdict(mode, reason, switch)
}

fn verdict(mode: Mode, reason: String, switch: Switch) -> Arbitration {
    Arbitration {
        mode,
        reason,
        need_charge_task: false,
        switch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, kind: TaskKind, priority: Priority, status: TaskStatus) -> Task {
        let mut t = Task::new(id.into(), kind, priority, 0.0);
        t.status = status;
        t
    }

    fn input<'a>(active: Option<&'a Task>, best: Option<&'a Task>) -> ArbitrationInput<'a> {
        ArbitrationInput {
            estop: false,
            link_up: true,
            battery_pct: 80.0,
            battery_low_pct: 20.0,
            has_charge_task: false,
            active,
            best,
        }
    }

    #[test]
    fn safety_beats_everything() {
        let t = task(
            "t1",
            TaskKind::Charge,
            Priority::Battery,
            TaskStatus::Running,
        );
        let mut i = input(Some(&t), Some(&t));
        i.estop = true;
        i.battery_pct = 5.0;
        assert_eq!(arbitrate(&i).mode, Mode::Safe);
        i.estop = false;
        i.link_up = false;
        assert_eq!(arbitrate(&i).mode, Mode::Safe);
    }

    #[test]
    fn low_battery_asks_for_a_charge_task_once() {
        let t = task(
            "t1",
            TaskKind::Goto {
                zone: "kitchen".into(),
            },
            Priority::Main,
            TaskStatus::Running,
        );
        let mut i = input(Some(&t), Some(&t));
        i.battery_pct = 19.9;
        let a = arbitrate(&i);
        assert!(a.need_charge_task);
        assert_eq!(a.mode, Mode::Charge);
        i.has_charge_task = true;
        assert!(!arbitrate(&i).need_charge_task);
    }

    #[test]
    fn battery_preempts_by_rule_and_users_through_the_loop() {
        let main = task(
            "t1",
            TaskKind::Goto {
                zone: "kitchen".into(),
            },
            Priority::Main,
            TaskStatus::Running,
        );
        let charge = task(
            "t2",
            TaskKind::Charge,
            Priority::Battery,
            TaskStatus::Queued,
        );
        let a = arbitrate(&input(Some(&main), Some(&charge)));
        assert_eq!(a.switch, Switch::Preempt("t2".into()));
        assert_eq!(a.mode, Mode::Charge);
        let user = task(
            "t3",
            TaskKind::Goto {
                zone: "bedroom".into(),
            },
            Priority::UserInterrupt,
            TaskStatus::Queued,
        );
        let a = arbitrate(&input(Some(&main), Some(&user)));
        assert_eq!(a.switch, Switch::UserPreempt("t3".into()));
        assert_eq!(a.mode, Mode::Exec);
    }

    #[test]
    fn nothing_runnable_is_idle_with_a_reason() {
        let t = task(
            "t1",
            TaskKind::Goto {
                zone: "kitchen".into(),
            },
            Priority::Main,
            TaskStatus::WaitingHuman,
        );
        let a = arbitrate(&input(Some(&t), None));
        assert_eq!(a.mode, Mode::Idle);
        assert_eq!(a.reason, "t1 is waiting for the operator");
        let a = arbitrate(&input(None, Some(&t)));
        assert_eq!(a.switch, Switch::Activate("t1".into()));
    }

    fn goto(id: &str, priority: Priority, status: TaskStatus) -> Task {
        task(
            id,
            TaskKind::Goto {
                zone: "kitchen".into(),
            },
            priority,
            status,
        )
    }

    #[test]
    fn safety_and_battery_say_why_and_keep_the_active_task() {
        let t = goto("t1", Priority::Main, TaskStatus::Running);
        let mut i = input(Some(&t), Some(&t));
        i.estop = true;
        let a = arbitrate(&i);
        assert_eq!(
            (a.reason.as_str(), a.switch, a.need_charge_task),
            ("E-stop is latched", Switch::Keep, false)
        );
        i.estop = false;
        i.link_up = false;
        assert_eq!(arbitrate(&i).reason, "robot link is down");
        i.link_up = true;
        // At the threshold exactly, charging preempts.
        i.battery_pct = 20.0;
        let a = arbitrate(&i);
        assert_eq!(a.mode, Mode::Charge);
        assert_eq!(a.switch, Switch::Keep);
        assert_eq!(
            a.reason,
            "battery 20.0% ≤ 20%: charging preempts other work"
        );
        i.battery_pct = 20.1;
        let a = arbitrate(&i);
        assert_eq!((a.mode, a.need_charge_task), (Mode::Exec, false));
        assert_eq!(a.reason, "t1 (go to kitchen) is running");
    }

    #[test]
    fn a_charge_task_running_is_charge_mode() {
        let charge = task(
            "t2",
            TaskKind::Charge,
            Priority::Battery,
            TaskStatus::Running,
        );
        let mut i = input(Some(&charge), Some(&charge));
        i.battery_pct = 10.0;
        i.has_charge_task = true;
        let a = arbitrate(&i);
        assert_eq!(a.mode, Mode::Charge);
        assert_eq!(a.switch, Switch::Keep);
        assert_eq!(a.reason, "t2 (charge) is running");
        assert!(!a.need_charge_task);
    }

    #[test]
    fn who_runs_when_priorities_tie_or_a_task_may_not_be_set_aside() {
        let main = goto("t1", Priority::Main, TaskStatus::Running);
        let other = goto("t2", Priority::Main, TaskStatus::Queued);
        // Equal priority: the active task keeps running.
        let a = arbitrate(&input(Some(&main), Some(&other)));
        assert_eq!(
            (a.switch, a.reason.as_str()),
            (Switch::Keep, "t1 (go to kitchen) is running")
        );
        // A higher priority does not set aside a task that is not preemptible.
        let mut fixed = main.clone();
        fixed.preemptible = false;
        let charge = task(
            "t3",
            TaskKind::Charge,
            Priority::Battery,
            TaskStatus::Queued,
        );
        let a = arbitrate(&input(Some(&fixed), Some(&charge)));
        assert_eq!((a.switch, a.mode), (Switch::Keep, Mode::Exec));
        // A user interrupt over a running user interrupt waits its turn.
        let user = goto("t4", Priority::UserInterrupt, TaskStatus::Running);
        let a = arbitrate(&input(Some(&user), Some(&main)));
        assert_eq!(a.switch, Switch::Keep);
        // The best task is the active one.
        let a = arbitrate(&input(Some(&main), Some(&main)));
        assert_eq!(a.switch, Switch::Keep);
        // Safety outranks battery: it preempts by rule too.
        let safety = goto("t5", Priority::Safety, TaskStatus::Queued);
        let a = arbitrate(&input(Some(&main), Some(&safety)));
        assert_eq!(
            (a.switch, a.mode),
            (Switch::Preempt("t5".into()), Mode::Exec)
        );
        assert_eq!(a.reason, "t5 (go to kitchen) is running");
    }

    #[test]
    fn an_active_task_that_cannot_run_is_replaced_by_the_best() {
        let paused = goto("t1", Priority::UserInterrupt, TaskStatus::Paused);
        let next = goto("t2", Priority::Main, TaskStatus::Queued);
        let a = arbitrate(&input(Some(&paused), Some(&next)));
        assert_eq!(a.switch, Switch::Activate("t2".into()));
        assert_eq!(a.reason, "t2 (go to kitchen) is running");
        let a = arbitrate(&input(Some(&paused), None));
        assert_eq!((a.mode, a.reason.as_str()), (Mode::Idle, "t1 is paused"));
        let a = arbitrate(&input(None, None));
        assert_eq!((a.mode, a.reason.as_str()), (Mode::Idle, "no task to run"));
        let done = goto("t3", Priority::Main, TaskStatus::Succeeded);
        assert_eq!(
            arbitrate(&input(Some(&done), None)).reason,
            "no task to run"
        );
    }
}
