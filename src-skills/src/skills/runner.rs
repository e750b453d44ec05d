//! Running goals: who holds which resource, until when, and how each ended.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{SkillContext, SkillError, SkillRegistry, Started};
use crate::link::{GoalOutcome, LinkReply, NavFeedback};
use crate::protocol::RunningSkillView;

/// A goal that has started and not ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningGoal {
    /// Goal id.
    pub goal_id: String,
    /// Skill name.
    pub skill: String,
    /// Arguments.
    pub args: Value,
    /// Task it serves, if any.
    pub task_id: Option<String>,
    /// Sim time it started.
    pub started_at: f64,
    /// Sim time it times out.
    pub deadline: f64,
    /// Exclusive resources it holds.
    pub resources: Vec<String>,
    /// Latest feedback.
    pub feedback: Option<NavFeedback>,
}

/// How a goal ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GoalResult {
    /// It succeeded with this output.
    Succeeded {
        /// The output.
        output: Value,
    },
    /// It failed.
    Failed {
        /// Error code (`blocked`, `no_path`, `timeout`, …).
        code: String,
        /// Detail.
        message: String,
    },
    /// It was cancelled.
    Cancelled,
}

/// A goal that ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Goal id.
    pub goal_id: String,
    /// Skill name.
    pub skill: String,
    /// Arguments.
    pub args: Value,
    /// Task it served.
    pub task_id: Option<String>,
    /// How it ended.
    pub result: GoalResult,
}

/// What a link reply meant for the running goals.
#[derive(Debug, Clone, PartialEq)]
pub enum GoalUpdate {
    /// Progress of a running goal.
    Feedback(RunningGoal),
    /// A goal ended.
    Ended(Completion),
}

/// The set of running goals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillRunner {
    running: Vec<RunningGoal>,
}

impl SkillRunner {
    /// No goals running.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts `skill` (arguments already checked). Returns the completion
    /// at once for skills that finish immediately.
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch(
        &mut self,
        registry: &mut SkillRegistry,
        ctx: &mut SkillContext<'_>,
        goal_id: &str,
        skill: &str,
        args: &Value,
        task_id: Option<&str>,
        now: f64,
    ) -> Result<Option<Completion>, SkillError> {
        let spec = registry
            .spec(skill)
            .ok_or_else(|| SkillError::Unknown(skill.to_string()))?;
        let (timeout, resources) = (spec.timeout_s, spec.resources.clone());
        let ended = |result| Completion {
            goal_id: goal_id.to_string(),
            skill: skill.to_string(),
            args: args.clone(),
            task_id: task_id.map(str::to_string),
            result,
        };
        match registry.start(skill, goal_id, args, ctx)? {
            Started::Done(output) => Ok(Some(ended(GoalResult::Succeeded { output }))),
            Started::Failed { code, message } => {
                Ok(Some(ended(GoalResult::Failed { code, message })))
            }
            Started::OnRobot => {
                self.running.push(RunningGoal {
                    goal_id: goal_id.to_string(),
                    skill: skill.to_string(),
                    args: args.clone(),
                    task_id: task_id.map(str::to_string),
                    started_at: now,
                    deadline: now + timeout,
                    resources,
                    feedback: None,
                });
                Ok(None)
            }
        }
    }

    /// Cancels a running goal; its resources are free at once.
    pub fn cancel(
        &mut self,
        registry: &mut SkillRegistry,
        ctx: &mut SkillContext<'_>,
        goal_id: &str,
    ) -> Result<Option<Completion>, SkillError> {
        let Some(i) = self.running.iter().position(|g| g.goal_id == goal_id) else {
            return Ok(None);
        };
        let goal = self.running.remove(i);
        registry.cancel(&goal.skill, goal_id, ctx)?;
        Ok(Some(Self::ended(goal, GoalResult::Cancelled)))
    }

    /// Applies a reply from the robot. Replies about goals no longer running
    /// (already cancelled here) are ignored.
    pub fn on_reply(&mut self, reply: &LinkReply) -> Option<GoalUpdate> {
        match reply {
            LinkReply::Feedback { goal_id, feedback } => {
                let goal = self.running.iter_mut().find(|g| &g.goal_id == goal_id)?;
                goal.feedback = Some(feedback.clone());
                Some(GoalUpdate::Feedback(goal.clone()))
            }
            LinkReply::Result { goal_id, outcome } => {
                let result = match outcome {
                    GoalOutcome::Succeeded { navigation_time } => GoalResult::Succeeded {
                        output: serde_json::json!({"navigation_time": navigation_time}),
                    },
                    GoalOutcome::Failed { error, message } => GoalResult::Failed {
                        code: error.as_str().to_string(),
                        message: message.clone(),
                    },
                    GoalOutcome::Canceled => GoalResult::Cancelled,
                };
                self.finish(goal_id, result)
            }
            LinkReply::Rejected {
                goal_id,
                error,
                message,
            } => self.finish(
                goal_id,
                GoalResult::Failed {
                    code: error.as_str().to_string(),
                    message: message.clone(),
                },
            ),
            _ => None,
        }
    }

    /// A goal that ran off the robot ended (see [`super::Skill::poll`]).
    pub fn on_result(&mut self, goal_id: &str, result: GoalResult) -> Option<GoalUpdate> {
        self.finish(goal_id, result)
    }

    /// Cancels every goal past its deadline and reports it failed with `timeout`.
    pub fn expire(
        &mut self,
        registry: &mut SkillRegistry,
        ctx: &mut SkillContext<'_>,
        now: f64,
    ) -> Vec<Completion> {
        let mut out = Vec::new();
        while let Some(i) = self.running.iter().position(|g| now >= g.deadline) {
            let goal = self.running.remove(i);
            // The goal is over for the brain whether or not the robot hears the cancel.
            let _ = registry.cancel(&goal.skill, &goal.goal_id, ctx);
            let message = format!("no result within {:.0} s", goal.deadline - goal.started_at);
            out.push(Self::ended(
                goal,
                GoalResult::Failed {
                    code: "timeout".into(),
                    message,
                },
            ));
        }
        out
    }

    /// Running goals, oldest first.
    pub fn running(&self) -> &[RunningGoal] {
        &self.running
    }

    /// The running goal holding `resource`, if any.
    pub fn holder_of(&self, resource: &str) -> Option<&RunningGoal> {
        self.running
            .iter()
            .find(|g| g.resources.iter().any(|r| r == resource))
    }

    /// Exclusive resources in use.
    pub fn busy(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .running
            .iter()
            .flat_map(|g| g.resources.iter().cloned())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Running goals as faces see them.
    pub fn views(&self) -> Vec<RunningSkillView> {
        self.running
            .iter()
            .map(|g| RunningSkillView {
                goal_id: g.goal_id.clone(),
                skill: g.skill.clone(),
                args: g.args.clone(),
                started_at: g.started_at,
                deadline: g.deadline,
                resources: g.resources.clone(),
                feedback: g.feedback.clone(),
            })
            .collect()
    }

    fn finish(&mut self, goal_id: &str, result: GoalResult) -> Option<GoalUpdate> {
        let i = self.running.iter().position(|g| g.goal_id == goal_id)?;
        let goal = self.running.remove(i);
        Some(GoalUpdate::Ended(Self::ended(goal, result)))
    }

    fn ended(goal: RunningGoal, result: GoalResult) -> Completion {
        Completion {
            goal_id: goal.goal_id,
            skill: goal.skill,
            args: goal.args,
            task_id: goal.task_id,
            result,
        }
    }
}
