//! A task: what the operator (or the kernel) asked for, as a plan of skill
//! steps, with the ReAct state that belongs to it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::protocol::{Priority, TaskStatus, TaskView};
pub use crate::react::PlanStep;
use crate::react::ReactState;

/// What a task is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskKind {
    /// Go to a zone.
    Goto {
        /// Zone name.
        zone: String,
    },
    /// Visit zones in order.
    Patrol {
        /// Route name, if it came from the world.
        route: Option<String>,
        /// Zones to visit.
        zones: Vec<String>,
    },
    /// Dock and charge until the battery is at the resume threshold.
    Charge,
    /// One skill call asked for from outside the brain (`Command::Call`).
    Call {
        /// Skill name.
        skill: String,
        /// Its arguments.
        args: Value,
    },
    /// Skill calls run one after the other (`Command::Chain`).
    Chain {
        /// The calls, in order.
        calls: Vec<PlanStep>,
    },
}

impl TaskKind {
    /// Short name (`goto`, `patrol`, `charge`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Goto { .. } => "goto",
            Self::Patrol { .. } => "patrol",
            Self::Charge => "charge",
            Self::Call { .. } => "call",
            Self::Chain { .. } => "chain",
        }
    }

    /// The plan that carries the task out.
    pub fn plan(&self) -> Vec<PlanStep> {
        match self {
            Self::Goto { zone } => vec![PlanStep::navigate(zone)],
            // At each waypoint: go there, then look around (seed 000 §3.5).
            Self::Patrol { zones, .. } => zones
                .iter()
                .flat_map(|z| [PlanStep::navigate(z), PlanStep::watch()])
                .collect(),
            Self::Charge => vec![PlanStep {
                skill: "dock".into(),
                args: json!({}),
            }],
            Self::Call { skill, args } => vec![PlanStep {
                skill: skill.clone(),
                args: args.clone(),
            }],
            Self::Chain { calls } => calls.clone(),
        }
    }

    /// The task in words.
    pub fn title(&self) -> String {
        match self {
            Self::Goto { zone } => format!("go to {zone}"),
            Self::Patrol { zones, .. } => patrol_title(zones),
            Self::Charge => "charge".into(),
            Self::Call { skill, .. } => format!("call {skill}"),
            Self::Chain { calls } => {
                let names: Vec<&str> = calls.iter().map(|c| c.skill.as_str()).collect();
                format!("chain: {}", names.join(" → "))
            }
        }
    }
}

/// How many zones a patrol's title names before it abbreviates.
const TITLE_ZONES: usize = 6;

/// `patrol: kitchen → bedroom`, or for a long route the first zones and how
/// many more follow.
fn patrol_title(zones: &[String]) -> String {
    let shown = zones.len().min(TITLE_ZONES);
    let named = zones[..shown].join(" → ");
    match zones.len() - shown {
        0 => format!("patrol: {named}"),
        more => format!("patrol: {named} → … (+{more} more)"),
    }
}

/// A task with its plan and its ReAct state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// `t1`, `t2`, …
    pub id: String,
    /// What it is for.
    pub kind: TaskKind,
    /// Its priority.
    pub priority: Priority,
    /// Its status.
    pub status: TaskStatus,
    /// Its plan.
    pub plan: Vec<PlanStep>,
    /// The step it is on.
    pub cursor: usize,
    /// Sim time it must be done by, if any.
    pub deadline: Option<f64>,
    /// Sim time it was created.
    pub created_at: f64,
    /// Whether a higher-priority task may set it aside.
    pub preemptible: bool,
    /// Consecutive failures per skill (reset on that skill's success).
    pub failures: BTreeMap<String, u32>,
    /// The inner loop's state for this task.
    pub react: ReactState,
    /// Where the command that queued it came from (none for the robot's
    /// own tasks: a charge, a patrol round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::protocol::Origin>,
    /// The operator who approved a step of a task asked for from a door
    /// that only asks ([`crate::protocol::Door::only_asks`]): from then on
    /// the task is theirs, and its motions are judged as an operator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vouched_by: Option<crate::protocol::Origin>,
}

impl Task {
    /// A new queued task.
    pub fn new(id: String, kind: TaskKind, priority: Priority, now: f64) -> Self {
        Self {
            id,
            plan: kind.plan(),
            kind,
            priority,
            status: TaskStatus::Queued,
            cursor: 0,
            deadline: None,
            created_at: now,
            preemptible: true,
            failures: BTreeMap::new(),
            react: ReactState::default(),
            origin: None,
            vouched_by: None,
        }
    }

    /// The door-that-only-asks this task came from, while no operator has
    /// approved a step of it: its motions wait for an approval.
    pub fn only_asked(&self) -> Option<&crate::protocol::Origin> {
        self.origin
            .as_ref()
            .filter(|o| o.door.only_asks() && self.vouched_by.is_none())
    }

    /// The step it is on, if the plan is not done.
    pub fn current_step(&self) -> Option<&PlanStep> {
        self.plan.get(self.cursor)
    }

    /// The step it is on and the ones after it, at most `n` in all.
    pub fn plan_ahead(&self, n: usize) -> Vec<PlanStep> {
        self.plan
            .iter()
            .skip(self.cursor)
            .take(n)
            .cloned()
            .collect()
    }

    /// Whether the task can be made active.
    pub fn is_runnable(&self) -> bool {
        matches!(
            self.status,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::Preempted
        )
    }

    /// The task in words.
    pub fn title(&self) -> String {
        self.kind.title()
    }

    /// The task as faces see it.
    pub fn view(&self) -> TaskView {
        TaskView {
            id: self.id.clone(),
            title: self.title(),
            kind: self.kind.name().into(),
            priority: self.priority,
            status: self.status,
            step: self.cursor,
            steps: self.plan.len(),
            deadline: self.deadline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patrol(n: usize) -> TaskKind {
        TaskKind::Patrol {
            zones: (0..n).map(|i| format!("z{i}")).collect(),
            route: None,
        }
    }

    #[test]
    fn a_long_patrol_has_a_short_title() {
        assert_eq!(patrol(2).title(), "patrol: z0 → z1");
        assert_eq!(
            patrol(100).title(),
            "patrol: z0 → z1 → z2 → z3 → z4 → z5 → … (+94 more)"
        );
    }

    #[test]
    fn the_plan_ahead_starts_at_the_cursor_and_is_bounded() {
        let mut task = Task::new("t1".into(), patrol(20), Priority::Main, 0.0);
        // Each zone is two steps: go there, look around.
        task.cursor = 36;
        let ahead = task.plan_ahead(8);
        assert_eq!(ahead.len(), 4);
        assert_eq!(ahead[0], PlanStep::navigate("z18"));
        assert_eq!(ahead[1], PlanStep::watch());
        task.cursor = 2;
        assert_eq!(task.plan_ahead(8).len(), 8);
    }

    #[test]
    fn each_kind_has_its_plan_title_and_name() {
        let call = TaskKind::Call {
            skill: "speak".into(),
            args: json!({"text": "hi"}),
        };
        let chain = TaskKind::Chain {
            calls: vec![PlanStep::watch(), PlanStep::navigate("hall")],
        };
        let cases = [
            (
                TaskKind::Goto {
                    zone: "hall".into(),
                },
                "goto",
                "go to hall",
                vec![PlanStep::navigate("hall")],
            ),
            (
                patrol(2),
                "patrol",
                "patrol: z0 → z1",
                vec![
                    PlanStep::navigate("z0"),
                    PlanStep::watch(),
                    PlanStep::navigate("z1"),
                    PlanStep::watch(),
                ],
            ),
            (
                TaskKind::Charge,
                "charge",
                "charge",
                vec![PlanStep {
                    skill: "dock".into(),
                    args: json!({}),
                }],
            ),
            (
                call,
                "call",
                "call speak",
                vec![PlanStep {
                    skill: "speak".into(),
                    args: json!({"text": "hi"}),
                }],
            ),
            (
                chain,
                "chain",
                "chain: watch → navigate_to",
                vec![PlanStep::watch(), PlanStep::navigate("hall")],
            ),
        ];
        for (kind, name, title, plan) in cases {
            assert_eq!(
                (kind.name(), kind.title(), kind.plan()),
                (name, title.to_string(), plan)
            );
        }
        assert_eq!(patrol(6).title(), "patrol: z0 → z1 → z2 → z3 → z4 → z5");
        assert_eq!(
            patrol(7).title(),
            "patrol: z0 → z1 → z2 → z3 → z4 → z5 → … (+1 more)"
        );
    }

    #[test]
    fn a_task_runs_while_queued_running_or_preempted_and_shows_its_progress() {
        let mut task = Task::new("t1".into(), patrol(3), Priority::Main, 4.0);
        for (status, runnable) in [
            (TaskStatus::Queued, true),
            (TaskStatus::Running, true),
            (TaskStatus::Preempted, true),
            (TaskStatus::Paused, false),
            (TaskStatus::WaitingHuman, false),
            (TaskStatus::Succeeded, false),
            (TaskStatus::Aborted, false),
            (TaskStatus::Cancelled, false),
        ] {
            task.status = status;
            assert_eq!(task.is_runnable(), runnable, "{status:?}");
        }
        task.cursor = 5;
        assert_eq!(task.current_step(), Some(&PlanStep::watch()));
        let view = task.view();
        assert_eq!(
            (view.id.as_str(), view.kind.as_str(), view.step, view.steps),
            ("t1", "patrol", 5, 6)
        );
        assert_eq!(view.title, "patrol: z0 → z1 → z2");
        task.cursor = 6;
        assert_eq!(task.current_step(), None);
        assert!(task.plan_ahead(8).is_empty());
    }
}
