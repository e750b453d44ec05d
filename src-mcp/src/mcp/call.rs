//! One skill call from outside the brain (`Command::Call`), followed through
//! the events: the `task` event whose reason is `call <id>` names its task;
//! from then on the task's approvals, its skill goals and its end decide
//! the outcome the caller gets.

use serde::Serialize;
use serde_json::Value;

use crate::protocol::{ApprovalStatus, EventKind, Op, SkillStatus, TaskStatus, Verdict};

/// How a call turned out, as far as its caller is concerned.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The policy wants an operator: the call has not run and runs only
    /// once an operator approves `approval_id` (never the caller).
    ConfirmationRequired {
        /// The call's task.
        task_id: String,
        /// The pending approval.
        approval_id: String,
        /// Why the policy wants it.
        reason: String,
    },
    /// The skill ran and succeeded.
    Succeeded {
        /// The call's task.
        task_id: String,
        /// What the skill returned, if anything.
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
    },
    /// The call did not succeed: refused, failed, cancelled, or stuck waiting
    /// for the operator.
    Failed {
        /// The call's task.
        task_id: String,
        /// The task's status when the call gave up (`aborted`, `waiting_human`, …).
        task_status: TaskStatus,
        /// What went wrong, in words.
        message: String,
    },
}

/// Follows the events of one call until its outcome is known.
#[derive(Debug, Clone)]
pub struct CallWatch {
    call_id: String,
    skill: String,
    args: Value,
    task_id: Option<String>,
    goals: Vec<String>,
    output: Option<Value>,
    failure: Option<String>,
}

impl CallWatch {
    /// Watches call `call_id` of `skill` with `args` (as sent in `Command::Call`).
    pub fn new(call_id: &str, skill: &str, args: &Value) -> Self {
        Self {
            call_id: call_id.to_string(),
            skill: skill.to_string(),
            args: args.clone(),
            task_id: None,
            goals: Vec::new(),
            output: None,
            failure: None,
        }
    }

    /// The `task` event reason that queues call `call_id`.
    pub fn queued_reason(call_id: &str) -> String {
        format!("call {call_id}")
    }

    /// The call's task, once it is queued.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// Takes in one event; returns the outcome once it is known.
    pub fn on_event(&mut self, kind: &EventKind) -> Option<CallOutcome> {
        let Some(task_id) = self.task_id.clone() else {
            if let EventKind::Task { task, reason } = kind
                && *reason == Self::queued_reason(&self.call_id)
            {
                self.task_id = Some(task.id.clone());
            }
            return None;
        };
        match kind {
            EventKind::Approval {
                task_id: t,
                approval_id,
                status,
                op,
                reason,
                ..
            } if *t == task_id => match status {
                ApprovalStatus::Requested => {
                    return Some(CallOutcome::ConfirmationRequired {
                        task_id,
                        approval_id: approval_id.clone(),
                        reason: reason.clone(),
                    });
                }
                ApprovalStatus::Edited => {
                    if let Op::Dispatch { skill, args } = op
                        && *skill == self.skill
                    {
                        self.args = args.clone();
                    }
                }
                ApprovalStatus::Rejected => self.failure = Some(format!("rejected: {reason}")),
                ApprovalStatus::Approved | ApprovalStatus::EditRefused => {}
            },
            EventKind::Guardrail {
                task_id: t,
                verdict: Verdict::Rejected,
                reason,
                ..
            } if *t == task_id => {
                self.failure = Some(format!("refused by the guardrails: {reason}"));
            }
            EventKind::Skill {
                goal_id,
                skill,
                status,
                args,
                error,
                message,
                output,
                ..
            } => self.on_skill(
                goal_id,
                skill,
                *status,
                args,
                error.as_deref(),
                message,
                output.as_ref(),
            ),
            EventKind::Task { task, reason } if task.id == task_id => {
                return self.on_task_status(task_id, task.status, reason);
            }
            _ => {}
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn on_skill(
        &mut self,
        goal_id: &str,
        skill: &str,
        status: SkillStatus,
        args: &Value,
        error: Option<&str>,
        message: &str,
        output: Option<&Value>,
    ) {
        let mine = self.goals.iter().any(|g| g == goal_id);
        match status {
            SkillStatus::Dispatched if skill == self.skill && *args == self.args && !mine => {
                self.goals.push(goal_id.to_string());
            }
            SkillStatus::Succeeded if mine => self.output = output.cloned(),
            SkillStatus::Failed if mine || (skill == self.skill && *args == self.args) => {
                let code = error.unwrap_or("failed");
                self.failure = Some(if message.is_empty() {
                    format!("{skill} failed: {code}")
                } else {
                    format!("{skill} failed: {code} ({message})")
                });
            }
            _ => {}
        }
    }

    fn on_task_status(
        &mut self,
        task_id: String,
        status: TaskStatus,
        reason: &str,
    ) -> Option<CallOutcome> {
        match status {
            TaskStatus::Succeeded => Some(CallOutcome::Succeeded {
                task_id,
                output: self.output.take(),
            }),
            TaskStatus::Aborted | TaskStatus::Cancelled | TaskStatus::WaitingHuman => {
                let message = match &self.failure {
                    Some(f) => format!("{f}; {reason}"),
                    None => reason.to_string(),
                };
                Some(CallOutcome::Failed {
                    task_id,
                    task_status: status,
                    message,
                })
            }
            TaskStatus::Queued
            | TaskStatus::Running
            | TaskStatus::Preempted
            | TaskStatus::Paused => None,
        }
    }
}
