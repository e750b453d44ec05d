//! K2–K5: robot state and results in, activity, mode arbitration, preemption.

use serde_json::Value;

use super::Engine;
use crate::kernel::arbitrate::Switch;
use crate::kernel::{ArbitrationInput, TaskKind, arbitrate};
use crate::link::{LinkReply, NavFeedback};
use crate::protocol::{
    Activity, AlertStatus, EventKind, IncidentRecord, Mode, Node, Priority, SkillStatus, TaskStatus,
};
use crate::react::{LastResult, Phase};
use crate::skills::SkillRunner;
use crate::skills::runner::{Completion, GoalResult, GoalUpdate};
use crate::store::LedgerStatus;

/// Acknowledged alerts kept in the state (older ones live on in the events).
const KEEP_ACKNOWLEDGED: usize = 20;

impl Engine {
    /// K2: telemetry, feedback and results from the robot; skill time limits.
    pub(super) fn sync_robot(&mut self) {
        let mut replies = std::mem::take(&mut self.robot.replies);
        self.robot.link.drain(&mut replies);
        if self.robot.link.take_reconnected() {
            self.reconcile();
        }
        for reply in replies.drain(..) {
            match &reply {
                LinkReply::Telemetry { telemetry } => self.state.telemetry = telemetry.clone(),
                LinkReply::FaultApplied { fault } => self.emit(EventKind::Fault {
                    fault: fault.clone(),
                }),
                LinkReply::Refused { message } => self.emit(EventKind::Error {
                    code: "robot_refused".into(),
                    message: message.clone(),
                }),
                LinkReply::Accepted { goal_id } => {
                    self.ledger_update(goal_id, LedgerStatus::Accepted, None);
                }
                LinkReply::GoalStatus { goal_id, status } => {
                    if self.is_reconciling(goal_id) {
                        self.reconciled(goal_id, status);
                    }
                }
                LinkReply::Hello { .. } => {}
                LinkReply::Deadman { .. } => self.on_deadman(&reply),
                _ => self.apply_goal_reply(&reply),
            }
        }
        self.robot.replies = replies;
        self.skill_results();
        let (expired, _speech) = self.with_skills(SkillRunner::expire);
        for c in expired {
            self.on_completion(&c);
        }
    }

    /// Goals that ended off the robot (a model's answer to `watch`), and
    /// speech lines the model failed to voice.
    pub(super) fn skill_results(&mut self) {
        for (goal_id, result) in self.mind.registry.poll_all() {
            if let Some(GoalUpdate::Ended(c)) = self.mind.runner.on_result(&goal_id, result) {
                self.on_completion(&c);
            }
        }
        for why in self.traffic.speaker.take_failures() {
            self.log("warn", &why);
        }
    }

    /// Feedback or an end for a running goal.
    pub(super) fn apply_goal_reply(&mut self, reply: &LinkReply) {
        match self.mind.runner.on_reply(reply) {
            Some(GoalUpdate::Feedback(goal)) => {
                if let Some(f) = &goal.feedback {
                    self.on_feedback(goal.task_id.as_deref(), &goal.goal_id, f);
                }
                self.skill_event(
                    &goal.goal_id,
                    &goal.skill,
                    &goal.args,
                    SkillStatus::Feedback,
                    goal.feedback,
                    "",
                );
            }
            Some(GoalUpdate::Ended(c)) => self.on_completion(&c),
            None => {}
        }
    }

    fn on_feedback(&mut self, task_id: Option<&str>, goal_id: &str, f: &NavFeedback) {
        let (now, keep) = (
            self.state.time,
            self.setup.config.kernel.no_progress_window_s,
        );
        if let Some(task) = task_id.and_then(|id| self.state.queue.get_mut(id))
            && matches!(&task.react.phase, Phase::Running { goal_id: g } if g == goal_id)
        {
            task.react.progress.record(now, f.distance_remaining, keep);
        }
    }

    /// R7: a goal ended; if it was the task's step, record the result for the next decision.
    pub(super) fn on_completion(&mut self, c: &Completion) {
        self.completion_event(c);
        let is_step = c
            .task_id
            .as_deref()
            .and_then(|id| self.state.queue.get(id))
            .is_some_and(|t| match &t.react.phase {
                Phase::Running { goal_id }
                | Phase::Deciding {
                    step_goal: Some(goal_id),
                    ..
                } => *goal_id == c.goal_id,
                _ => false,
            });
        if is_step {
            self.step_ended(c);
        }
    }

    /// R7 for the task's current step: the plan moves on after a success,
    /// failures are counted, and the loop is ready to decide again (or,
    /// when the brain is thinking, to decide again after its answer).
    pub(super) fn step_ended(&mut self, c: &Completion) {
        let Some(task) = c
            .task_id
            .as_deref()
            .and_then(|id| self.state.queue.get_mut(id))
        else {
            return;
        };
        match &mut task.react.phase {
            // The brain still thinks: the result waits for the decision after its answer.
            Phase::Deciding { step_goal, .. } => *step_goal = None,
            phase => *phase = Phase::Ready,
        }
        let failure = match &c.result {
            GoalResult::Succeeded { .. } => {
                task.failures.remove(&c.skill);
                task.cursor += 1;
                task.react.last = Some(LastResult::Succeeded {
                    skill: c.skill.clone(),
                    args: c.args.clone(),
                });
                None
            }
            GoalResult::Failed { code, message } => {
                *task.failures.entry(c.skill.clone()).or_insert(0) += 1;
                task.react.last = Some(LastResult::Failed {
                    skill: c.skill.clone(),
                    args: c.args.clone(),
                    code: code.clone(),
                    message: message.clone(),
                });
                Some(format!("{} {}: {code} ({message})", c.skill, c.args))
            }
            GoalResult::Cancelled => {
                task.react.last = Some(LastResult::Cancelled {
                    skill: c.skill.clone(),
                });
                None
            }
        };
        self.node(Node::ObserveResult);
        if failure.is_some() {
            self.state.last_failure = failure;
        }
    }

    /// K3: an alert not yet acknowledged makes the activity ALERT; otherwise
    /// the active task decides it; telemetry is published.
    pub(super) fn update_world(&mut self) {
        let open = self
            .state
            .incidents
            .iter()
            .find(|i| i.acknowledged_by.is_none());
        let (activity, reason) = if let Some(i) = open {
            (
                Activity::Alert,
                format!(
                    "{} seen in {} (alert {})",
                    i.kinds.join(" and "),
                    i.zone,
                    i.id
                ),
            )
        } else {
            match self.state.queue.active() {
                Some(task) if matches!(task.kind, TaskKind::Patrol { .. }) => (
                    Activity::Patrolling,
                    format!("{} ({})", task.id, task.title()),
                ),
                Some(task) => (
                    Activity::Responding,
                    format!("{} ({})", task.id, task.title()),
                ),
                None => (Activity::Idle, "no active task".into()),
            }
        };
        if activity != self.state.activity {
            let from = self.state.activity;
            self.state.activity = activity;
            self.node(Node::WorldUpdate);
            self.emit(EventKind::Activity {
                from,
                to: activity,
                reason,
            });
        }
        let due = self.state.last_telemetry_at.is_none_or(|at| {
            self.state.time - at >= self.setup.config.kernel.telemetry_interval_s - 1e-9
        });
        if due {
            self.state.last_telemetry_at = Some(self.state.time);
            let t = self.state.telemetry.clone();
            self.emit(EventKind::Telemetry {
                pose: t.pose,
                battery_pct: t.battery_pct,
                charging: t.charging,
                zone: t.zone,
                distance_to_target: t.distance_to_target,
                busy: t.busy,
            });
        }
    }

    /// K4 and K5: hard-rule mode arbitration and the active task.
    pub(super) fn arbitrate(&mut self) {
        let mut battery_reason = None;
        for _ in 0..2 {
            let verdict = {
                let q = &self.state.queue;
                arbitrate(&ArbitrationInput {
                    estop: self.state.estop,
                    link_up: self.robot.link.is_connected(),
                    battery_pct: self.state.telemetry.battery_pct,
                    battery_low_pct: self.setup.config.kernel.battery_low_pct,
                    has_charge_task: q.has_charge_task(),
                    active: q.active(),
                    best: q.best_runnable(),
                })
            };
            if verdict.need_charge_task {
                self.node(Node::TaskQueueUpdate);
                let id =
                    self.state
                        .queue
                        .push(TaskKind::Charge, Priority::Battery, self.state.time);
                self.task_event(&id, &verdict.reason);
                battery_reason = Some(verdict.reason);
                continue;
            }
            // K4 decides the mode first; K5 then moves tasks.
            if verdict.mode != self.state.mode {
                let reason = match battery_reason {
                    Some(why) => format!("{why}; {}", verdict.reason),
                    None => verdict.reason.clone(),
                };
                self.set_mode(verdict.mode, reason);
            }
            // The user-preemption flag is recomputed every tick: a stale one
            // (its task now outranked by a charge task) would make the loop
            // switch back and forth.
            if !matches!(verdict.switch, Switch::UserPreempt(_)) {
                self.state.preempt_for = None;
            }
            match verdict.switch {
                Switch::Keep => {}
                Switch::Activate(id) => self.activate(&id),
                Switch::Preempt(id) => {
                    if let Some(old) = self.state.queue.active_id().map(str::to_string) {
                        let title = self
                            .state
                            .queue
                            .get(&id)
                            .map(super::super::kernel::task::Task::title)
                            .unwrap_or_default();
                        self.set_aside(&old, &format!("preempted by {id} ({title})"));
                    }
                    self.activate(&id);
                }
                Switch::UserPreempt(id) => self.state.preempt_for = Some(id),
            }
            return;
        }
    }

    fn activate(&mut self, id: &str) {
        self.node(Node::TaskQueueUpdate);
        self.state.queue.set_active(Some(id.to_string()));
        if self.state.preempt_for.as_deref() == Some(id) {
            self.state.preempt_for = None;
        }
        let Some(task) = self.state.queue.get_mut(id) else {
            return;
        };
        let resumed = task.status == TaskStatus::Preempted;
        task.status = TaskStatus::Running;
        let approved = std::mem::take(&mut task.react.approved);
        // A task set aside while it waited for the operator goes on waiting.
        let waiting = matches!(task.react.phase, Phase::AwaitingApproval { .. })
            && self.state.approvals.iter().any(|a| a.task_id == id);
        if let Some(task) = self.state.queue.get_mut(id)
            && !waiting
        {
            task.react.phase = Phase::Ready;
        }
        self.task_event(id, if resumed { "resumed" } else { "started" });
        if !approved.is_empty() {
            self.node(Node::Dispatch);
            self.dispatch_approved(id, &approved);
        }
    }

    pub(super) fn set_mode(&mut self, mode: Mode, reason: String) {
        let from = self.state.mode;
        if from == mode {
            return;
        }
        self.node(Node::ModeArbitrate);
        self.state.mode = mode;
        self.state.mode_reason.clone_from(&reason);
        self.emit(EventKind::Mode {
            from,
            to: mode,
            reason,
        });
    }

    /// Sets a task aside to run later (preemption or E-stop): its goals are
    /// cancelled and it resumes at the same step. Its pending approvals stay
    /// until the operator answers them (one approved meanwhile is dispatched
    /// when the task runs again).
    pub(super) fn set_aside(&mut self, id: &str, why: &str) {
        self.cancel_task_goals(id);
        self.interrupt(id, why);
    }

    /// Makes a task resume at the same step when it runs again, without
    /// touching its goals or approvals (a stop already ended its step).
    pub(super) fn interrupt(&mut self, id: &str, why: &str) {
        self.interrupt_as(id, TaskStatus::Preempted, why);
    }

    /// [`Engine::interrupt`], but the task is paused: it runs again only
    /// on the operator's `resume` (the E-stop, and its reset).
    pub(super) fn hold(&mut self, id: &str, why: &str) {
        self.interrupt_as(id, TaskStatus::Paused, why);
    }

    fn interrupt_as(&mut self, id: &str, status: TaskStatus, why: &str) {
        if let Some(task) = self.state.queue.get_mut(id) {
            task.status = status;
            if !matches!(task.react.phase, Phase::AwaitingApproval { .. }) {
                task.react.phase = Phase::Ready;
            }
            task.react.last = Some(LastResult::Resumed {
                after: why.to_string(),
            });
        }
        if self.state.queue.active_id() == Some(id) {
            self.state.queue.set_active(None);
        }
        self.task_event(id, why);
    }

    /// Stops a task for good or until the operator acts (paused, waiting, finished).
    pub(super) fn halt_task(&mut self, id: &str, status: TaskStatus, why: &str) {
        self.cancel_task_goals(id);
        self.withdraw_approvals(id);
        if let Some(task) = self.state.queue.get_mut(id) {
            task.status = status;
            task.react.phase = Phase::Halted;
        }
        if self.state.queue.active_id() == Some(id) {
            self.state.queue.set_active(None);
        }
        if self.state.preempt_for.as_deref() == Some(id) {
            self.state.preempt_for = None;
        }
        self.task_event(id, why);
    }

    /// Cancels a task's running goals.
    pub(super) fn cancel_task_goals(&mut self, id: &str) {
        let goals: Vec<String> = self
            .mind
            .runner
            .running()
            .iter()
            .filter(|g| g.task_id.as_deref() == Some(id))
            .map(|g| g.goal_id.clone())
            .collect();
        for goal_id in goals {
            self.cancel_goal(&goal_id);
        }
    }

    /// Withdraws a stopped task's pending approvals.
    fn withdraw_approvals(&mut self, id: &str) {
        let withdrawn: Vec<_> = self
            .state
            .approvals
            .iter()
            .filter(|a| a.task_id == id)
            .cloned()
            .collect();
        self.state.approvals.retain(|a| a.task_id != id);
        for a in withdrawn {
            self.emit(EventKind::Approval {
                approval_id: a.id,
                task_id: a.task_id,
                status: crate::protocol::ApprovalStatus::Rejected,
                op: a.op,
                reason: "withdrawn: the task stopped".into(),
                requested_by: a.requested_by,
            });
        }
    }

    /// Cancels one goal and reports it.
    pub(super) fn cancel_goal(&mut self, goal_id: &str) {
        let (cancelled, _speech) =
            self.with_skills(|runner, registry, ctx, _| runner.cancel(registry, ctx, goal_id));
        match cancelled {
            Ok(Some(c)) => self.completion_event(&c),
            Ok(None) => {}
            Err(e) => self.emit(EventKind::Error {
                code: "cancel_failed".into(),
                message: e.to_string(),
            }),
        }
    }

    pub(super) fn task_event(&mut self, id: &str, reason: &str) {
        if let Some(task) = self.state.queue.get(id) {
            let view = task.view();
            self.emit(EventKind::Task {
                task: view,
                reason: reason.to_string(),
            });
        }
    }

    pub(super) fn completion_event(&mut self, c: &Completion) {
        self.ledger_update(
            &c.goal_id,
            LedgerStatus::Done,
            Some(Self::ledger_result(&c.result)),
        );
        let (status, error, message) = match &c.result {
            GoalResult::Succeeded { output } => {
                let summary = output.get("summary").and_then(Value::as_str);
                (
                    SkillStatus::Succeeded,
                    None,
                    summary.unwrap_or_default().to_string(),
                )
            }
            GoalResult::Failed { code, message } => {
                (SkillStatus::Failed, Some(code.clone()), message.clone())
            }
            GoalResult::Cancelled => (SkillStatus::Cancelled, None, String::new()),
        };
        let mut ev = self.skill_kind(&c.goal_id, &c.skill, &c.args, status, None, &message);
        if let EventKind::Skill {
            error: e,
            output: o,
            ..
        } = &mut ev
        {
            *e = error;
            if let GoalResult::Succeeded { output } = &c.result
                && !output.is_null()
            {
                *o = Some(output.clone());
            }
        }
        self.emit(ev);
        if let GoalResult::Succeeded { output } = &c.result {
            self.absorb(output);
        }
    }

    /// What a finished skill's output means to the kernel: `shared` data
    /// merged in, an `utterance` heard, an `incident` recorded and announced.
    fn absorb(&mut self, output: &Value) {
        if let Some(shared) = output.get("shared").and_then(Value::as_object) {
            for (k, v) in shared {
                self.state.shared.insert(k.clone(), v.clone());
            }
        }
        // Words heard (`listen`) are acted on as an utterance, next tick.
        if let Some(text) = output.get("utterance").and_then(Value::as_str)
            && !text.trim().is_empty()
        {
            self.submit(
                crate::protocol::Command::Say {
                    text: text.to_string(),
                },
                crate::protocol::Origin::new(crate::protocol::Door::Voice, "listen"),
            );
        }
        let Some(raised) = output.get("incident") else {
            return;
        };
        let text = |k: &str| raised.get(k).and_then(Value::as_str).map(str::to_string);
        let incident = IncidentRecord {
            id: format!("i{}", self.state.alerts_raised + 1),
            time: self.state.time,
            zone: text("zone").unwrap_or_default(),
            kinds: raised
                .get("kinds")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            description: text("description").unwrap_or_default(),
            evidence: text("evidence"),
            vision: raised.get("vision").cloned().unwrap_or(Value::Null),
            status: AlertStatus::Open,
            acknowledged_by: None,
            acknowledged_at: None,
        };
        self.state.alerts_raised += 1;
        // Acknowledged alerts are kept for a while, then forgotten (the events keep them).
        let acknowledged = self
            .state
            .incidents
            .iter()
            .filter(|i| i.acknowledged_by.is_some())
            .count();
        if acknowledged >= KEEP_ACKNOWLEDGED
            && let Some(oldest) = self
                .state
                .incidents
                .iter()
                .position(|i| i.acknowledged_by.is_some())
        {
            self.state.incidents.remove(oldest);
        }
        self.state.incidents.push(incident.clone());
        let notify = self.mind.registry.spec("notify").is_some().then(|| {
            (
                format!("tell the alert service about alert {}", incident.id),
                serde_json::json!({ "incident": incident }),
            )
        });
        self.emit(EventKind::Alert {
            incident: Box::new(incident),
        });
        // The outside service hears of it as a task of its own, so its
        // approval outlives the patrol's wait for an acknowledgement.
        if let Some((why, args)) = notify {
            self.add_task(
                TaskKind::Call {
                    skill: "notify".into(),
                    args,
                },
                &why,
            );
        }
    }

    pub(super) fn skill_event(
        &mut self,
        goal_id: &str,
        skill: &str,
        args: &Value,
        status: SkillStatus,
        feedback: Option<NavFeedback>,
        message: &str,
    ) {
        let ev = self.skill_kind(goal_id, skill, args, status, feedback, message);
        self.emit(ev);
    }

    #[allow(clippy::unused_self)]
    fn skill_kind(
        &self,
        goal_id: &str,
        skill: &str,
        args: &Value,
        status: SkillStatus,
        feedback: Option<NavFeedback>,
        message: &str,
    ) -> EventKind {
        EventKind::Skill {
            goal_id: goal_id.to_string(),
            skill: skill.to_string(),
            status,
            args: args.clone(),
            feedback,
            error: None,
            message: message.to_string(),
            output: None,
        }
    }
}
