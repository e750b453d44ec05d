//! K6 and the ReAct loop R1–R8: when to decide, one iteration, and the
//! approval interrupt.

use serde_json::{Value, json};

use super::{Engine, PendingApproval};
use crate::brain::{BrainError, Thinking};
use crate::kernel::Task;
use crate::protocol::{
    ApprovalStatus, BrainKind, DecisionType, DecisionView, EventKind, Mode, Node, Op, SkillStatus,
    SpeechTrack, TaskStatus, Verdict,
};
use crate::react::guardrails::{GuardContext, Judged, judge};
use crate::react::observation::{PLAN_WINDOW, PreemptObs, RunningGoalObs};
use crate::react::{Decision, LastResult, Observation, Phase, guards};
use crate::skills::Completion;

/// What woke the loop.
enum Trigger {
    /// The phase asks for a decision.
    Ready,
    /// A running step is due for a progress check (with evidence of no progress).
    Check(Option<String>),
}

/// How a dispatch went.
enum Dispatched {
    /// The goal runs on the robot; its result comes later.
    Running,
    /// It finished at once.
    Ended(Box<Completion>),
    /// It could not start (the task has been told).
    Refused,
}

impl Engine {
    /// K6: in EXEC or CHARGE, run the active task's inner loop when it is due.
    pub(super) fn route(&mut self) {
        if !matches!(self.state.mode, Mode::Exec | Mode::Charge) {
            return;
        }
        let Some(task) = self.state.queue.active() else {
            return;
        };
        let now = self.state.time;
        let k = &self.config.kernel;
        let preempt = self.state.preempt_for.is_some();
        if matches!(task.react.phase, Phase::Deciding { .. }) {
            let id = task.id.clone();
            self.poll_brain(&id);
            return;
        }
        let trigger = match &task.react.phase {
            Phase::Ready => Some(Trigger::Ready),
            Phase::Waiting { until, .. } if now >= *until - 1e-9 => Some(Trigger::Ready),
            Phase::Running { .. } if now >= task.react.next_check - 1e-9 => Some(Trigger::Check(
                task.react
                    .progress
                    .stalled(now, k.no_progress_window_s, k.no_progress_min_m),
            )),
            Phase::Halted | Phase::Deciding { .. } => None,
            Phase::Waiting { .. } | Phase::Running { .. } | Phase::AwaitingApproval { .. } => {
                preempt.then_some(Trigger::Check(None))
            }
        };
        let Some(trigger) = trigger else { return };
        let id = task.id.clone();
        if let Some(task) = self.state.queue.get_mut(&id) {
            if let Phase::Waiting { since, until } = task.react.phase
                && now >= until - 1e-9
                && task.react.last.is_none()
            {
                task.react.last = Some(LastResult::Waited {
                    seconds: until - since,
                });
            }
            if let (Trigger::Check(Some(_)), Some(step)) = (&trigger, task.current_step().cloned())
            {
                *task.failures.entry(step.skill).or_insert(0) += 1;
            }
        }
        let no_progress = match trigger {
            Trigger::Check(evidence) => evidence,
            Trigger::Ready => None,
        };
        self.iterate(&id, no_progress);
    }

    /// One ReAct iteration for task `id`.
    fn iterate(&mut self, id: &str, no_progress: Option<String>) {
        // R1: observe.
        self.node(Node::BuildObservation);
        let Some(obs) = self.observe(id, no_progress) else {
            return;
        };
        self.emit(EventKind::Update {
            node: Node::BuildObservation,
            changed: json!({
                "task_id": obs.task_id, "iteration": obs.iteration, "step": obs.step,
                "last_result": obs.last_result, "no_progress": obs.no_progress,
                "preempt": obs.preempt, "battery_pct": (obs.battery_pct * 10.0).round() / 10.0,
                "zone": obs.zone,
            }),
        });
        // R2: decide (the loop guards speak first; the brain never sees a tripped loop).
        let guard = self
            .state
            .queue
            .get(id)
            .and_then(|t| guards::tripped(t, obs.iteration, &self.config.kernel));
        let thinking = match guard {
            Some(reason) => Thinking::Done(Ok((
                Decision::new(DecisionType::AskHuman, reason),
                BrainKind::Kernel,
            ))),
            None => self.brain.decide(&obs, &self.registry),
        };
        if let Some(t) = self.state.queue.get_mut(id) {
            t.react.last = None;
        }
        match thinking {
            Thinking::Done(answer) => self.decided(id, &obs, answer),
            Thinking::Pending => {
                if let Some(t) = self.state.queue.get_mut(id) {
                    t.react.phase = Phase::Deciding {
                        observation: Box::new(obs),
                    };
                }
            }
        }
    }

    /// Polls a brain that is still thinking about task `id`.
    pub(super) fn poll_brain(&mut self, id: &str) {
        let mut events = Vec::new();
        let thinking = self.brain.poll(&mut events);
        for e in events {
            self.emit(e);
        }
        if let Thinking::Done(answer) = thinking {
            let Some(task) = self.state.queue.get_mut(id) else {
                return;
            };
            let Phase::Deciding { observation } =
                std::mem::replace(&mut task.react.phase, Phase::Ready)
            else {
                return;
            };
            self.decided(id, &observation, answer);
        }
    }

    /// R2's answer arrived: R3–R8.
    fn decided(
        &mut self,
        id: &str,
        obs: &Observation,
        answer: Result<(Decision, BrainKind), BrainError>,
    ) {
        let (mut decision, brain) = match answer {
            Ok(d) => d,
            Err(e) => (
                Decision::new(DecisionType::AskHuman, format!("the brain failed: {e}")),
                BrainKind::Kernel,
            ),
        };
        // The kernel's preemption is a hard rule: a brain that ignores it is overruled.
        if obs.preempt.is_some() && decision.decision_type != DecisionType::SwitchTask {
            let reason = format!(
                "kernel: a higher-priority task waits; {} overruled",
                decision.decision_type.as_str()
            );
            let cancels = obs.running.iter().map(|g| Op::Cancel {
                goal_id: g.goal_id.clone(),
            });
            decision = Decision::new(DecisionType::SwitchTask, reason).with_ops(cancels);
        }
        self.node(Node::Decide);
        self.state.last_decision = Some(DecisionView {
            iteration: obs.iteration,
            decision_type: decision.decision_type,
            reason: decision.reason.clone(),
            brain,
        });
        self.emit(EventKind::Decision {
            task_id: id.to_string(),
            iteration: obs.iteration,
            decision_type: decision.decision_type,
            reason: decision.reason.clone(),
            brain,
            ops: decision.ops.clone(),
        });
        // R3: compile the plan patch.
        self.node(Node::CompileOps);
        if decision.plan_patch.as_ref().is_some_and(|p| p.skip_current)
            && let Some(t) = self.state.queue.get_mut(id)
        {
            t.cursor += 1;
            t.failures.clear();
        }
        // R4: guardrails.
        self.node(Node::Guardrails);
        let judged = self.judge(id, &decision.ops, false);
        for j in &judged {
            self.emit(EventKind::Guardrail {
                task_id: id.to_string(),
                op: j.op.clone(),
                verdict: j.verdict,
                reason: j.reason.clone(),
            });
        }
        let rejected = judged
            .iter()
            .find(|j| j.verdict == Verdict::Rejected)
            .cloned();
        let looping = matches!(
            decision.decision_type,
            DecisionType::Continue | DecisionType::Replan | DecisionType::Retry
        );
        if let (Some(r), true) = (&rejected, looping) {
            if let Some(t) = self.state.queue.get_mut(id) {
                t.react.last = Some(LastResult::GuardrailRejected {
                    op: r.op.clone(),
                    reason: r.reason.clone(),
                });
                t.react.phase = Phase::Ready;
            }
            return;
        }
        // R5: the approval interrupt holds ops that need an operator.
        let mut approval = None;
        for j in judged
            .iter()
            .filter(|j| j.verdict == Verdict::NeedsApproval)
        {
            approval = Some(self.request_approval(id, j));
        }
        // R6: dispatch, the only node with side effects.
        self.node(Node::Dispatch);
        let allowed: Vec<Op> = judged
            .into_iter()
            .filter(|j| j.verdict == Verdict::Allowed)
            .map(|j| j.op)
            .collect();
        let step_goal = self.dispatch_ops(id, &allowed);
        // R8: stop or loop.
        self.node(Node::StopOrLoop);
        self.stop_or_loop(id, &decision, step_goal, approval);
    }

    fn observe(&self, id: &str, no_progress: Option<String>) -> Option<Observation> {
        let task = self.state.queue.get(id)?;
        let t = &self.state.telemetry;
        let preempt = self
            .state
            .preempt_for
            .as_deref()
            .and_then(|p| self.state.queue.get(p))
            .map(|p| PreemptObs {
                task_id: p.id.clone(),
                title: p.title(),
                reason: format!("priority {:?} > {:?}", p.priority, task.priority).to_lowercase(),
            });
        let failures = task
            .current_step()
            .and_then(|s| task.failures.get(&s.skill))
            .copied()
            .unwrap_or(0);
        Some(Observation {
            time: self.state.time,
            task_id: task.id.clone(),
            task_kind: task.kind.name().into(),
            title: task.title(),
            plan: task.plan_ahead(PLAN_WINDOW),
            step: task.cursor,
            plan_len: task.plan.len(),
            iteration: task.react.iteration + 1,
            zone: t.zone.clone(),
            battery_pct: t.battery_pct,
            charging: t.charging,
            battery_resume_pct: self.config.kernel.battery_resume_pct,
            distance_to_target: t.distance_to_target,
            running: self
                .runner
                .running()
                .iter()
                .filter(|g| g.task_id.as_deref() == Some(id))
                .map(|g| RunningGoalObs {
                    goal_id: g.goal_id.clone(),
                    skill: g.skill.clone(),
                    args: g.args.clone(),
                    feedback: g.feedback.clone(),
                })
                .collect(),
            last_result: task.react.last.clone(),
            failures,
            no_progress,
            preempt,
            blocked_passages: t.blocked_passages.clone(),
            incidents: t.incidents_in_view.clone(),
            replan_wait_s: self.config.kernel.replan_wait_s,
            vision: self.state.shared.get("last_vision_result").cloned(),
        })
    }

    fn judge(&self, id: &str, ops: &[Op], approved: bool) -> Vec<Judged> {
        let home = crate::hci::lock(&self.home);
        let gate = home.gate();
        let ctx = GuardContext {
            registry: &self.registry,
            world: &self.world,
            policy: &self.config.policy,
            mode: self.state.mode,
            runner: &self.runner,
            task_id: id,
            home: Some(&gate),
        };
        judge(ops, &ctx, approved)
    }

    fn request_approval(&mut self, task_id: &str, j: &Judged) -> String {
        self.state.approvals_created += 1;
        let id = format!("a{}", self.state.approvals_created);
        let risk = match &j.op {
            Op::Dispatch { skill, .. } => self
                .registry
                .spec(skill)
                .map_or("unknown", |s| s.risk.as_str()),
            _ => "unknown",
        };
        let pending = PendingApproval {
            id: id.clone(),
            task_id: task_id.to_string(),
            op: j.op.clone(),
            reason: j.reason.clone(),
            risk: risk.to_string(),
        };
        if let Op::Dispatch { skill, args } = &j.op
            && crate::policy::device_calls(skill, args, &[]).len()
                + usize::from(skill == "scenes.run")
                > 0
        {
            // A device write held by the policy: on the audit trail, whatever asked for it.
            let plan = args
                .get("plan_id")
                .and_then(Value::as_str)
                .unwrap_or(task_id);
            crate::hci::lock(&self.home).audit_held(skill, args, plan, &j.reason);
        }
        self.node(Node::ApprovalInterrupt);
        self.emit(EventKind::Approval {
            approval_id: id.clone(),
            task_id: task_id.to_string(),
            status: ApprovalStatus::Requested,
            op: j.op.clone(),
            reason: j.reason.clone(),
        });
        self.state.approvals.push(pending);
        id
    }

    /// Carries out allowed ops; returns the goal that carries the task's step, if one started.
    fn dispatch_ops(&mut self, task_id: &str, ops: &[Op]) -> Option<String> {
        let step_skill = self
            .state
            .queue
            .get(task_id)
            .and_then(Task::current_step)
            .map(|s| s.skill.clone());
        let mut step_goal = None;
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Cancel { goal_id } => self.cancel_goal(goal_id),
                Op::Wait { seconds } => {
                    let since = self.state.time;
                    if let Some(t) = self.state.queue.get_mut(task_id) {
                        t.react.phase = Phase::Waiting {
                            since,
                            until: since + seconds,
                        };
                    }
                }
                Op::Dispatch { skill, args } => {
                    let step = self.state.step;
                    let goal_id = crate::store::ledger::goal_id(&self.thread_id, step, i);
                    self.ledger_dispatch(&goal_id, step, i, skill);
                    let holds_base = self
                        .registry
                        .spec(skill)
                        .is_some_and(|s| !s.resources.is_empty());
                    let is_step = step_goal.is_none()
                        && (step_skill.as_deref() == Some(skill.as_str()) || holds_base);
                    match self.dispatch_one(task_id, &goal_id, skill, args) {
                        Dispatched::Running if is_step => step_goal = Some(goal_id),
                        // A step that finished at once (a look with the
                        // camera) is observed now, as if the robot had answered.
                        Dispatched::Ended(c)
                            if is_step && step_skill.as_deref() == Some(skill.as_str()) =>
                        {
                            self.step_ended(&c);
                        }
                        _ => {}
                    }
                }
            }
        }
        step_goal
    }

    /// Starts one skill goal.
    fn dispatch_one(
        &mut self,
        task_id: &str,
        goal_id: &str,
        skill: &str,
        args: &Value,
    ) -> Dispatched {
        let (result, speech) = self.with_skills(|runner, registry, ctx, now| {
            runner.dispatch(registry, ctx, goal_id, skill, args, Some(task_id), now)
        });
        match result {
            Ok(done) => {
                self.skill_event(goal_id, skill, args, SkillStatus::Dispatched, None, "");
                for (text, track) in speech {
                    self.speak(&text, track);
                }
                match done {
                    Some(c) => {
                        self.completion_event(&c);
                        Dispatched::Ended(Box::new(c))
                    }
                    None => Dispatched::Running,
                }
            }
            Err(e) => {
                let message = e.to_string();
                self.skill_event(goal_id, skill, args, SkillStatus::Failed, None, &message);
                if let Some(t) = self.state.queue.get_mut(task_id) {
                    t.react.last = Some(LastResult::Failed {
                        skill: skill.to_string(),
                        args: args.clone(),
                        code: "dispatch_failed".into(),
                        message: message.clone(),
                    });
                }
                self.state.last_failure = Some(message);
                Dispatched::Refused
            }
        }
    }

    /// R8: apply the decision's effect on the task and set the loop's next phase.
    fn stop_or_loop(
        &mut self,
        id: &str,
        decision: &Decision,
        step_goal: Option<String>,
        approval: Option<String>,
    ) {
        let now = self.state.time;
        let check = self.config.kernel.progress_check_s;
        match decision.decision_type {
            DecisionType::Finish => self.halt_task(id, TaskStatus::Succeeded, &decision.reason),
            DecisionType::Abort => self.halt_task(id, TaskStatus::Aborted, &decision.reason),
            DecisionType::AskHuman => {
                self.halt_task(id, TaskStatus::WaitingHuman, &decision.reason);
                let alerting = self
                    .state
                    .incidents
                    .iter()
                    .any(|i| i.acknowledged_by.is_none());
                let ask = if alerting {
                    "I will stay here until an operator says \"acknowledge\"."
                } else {
                    "Say \"retry\" to try again or \"cancel\" to give up."
                };
                if alerting {
                    self.speak(ask, SpeechTrack::Answer);
                } else {
                    self.speak(
                        &format!("I need help: {}. {ask}", decision.reason),
                        SpeechTrack::Answer,
                    );
                }
            }
            DecisionType::SwitchTask => self.set_aside(id, &decision.reason),
            DecisionType::Continue | DecisionType::Replan | DecisionType::Retry => {
                let running_step = self
                    .runner
                    .running()
                    .iter()
                    .find(|g| g.task_id.as_deref() == Some(id))
                    .map(|g| g.goal_id.clone());
                let Some(task) = self.state.queue.get_mut(id) else {
                    return;
                };
                task.react.iteration += 1;
                if let Some(approval_id) = approval {
                    task.react.phase = Phase::AwaitingApproval { approval_id };
                } else if let Some(goal_id) = step_goal {
                    task.react.phase = Phase::Running { goal_id };
                    task.react.progress.restart(now);
                    task.react.next_check = now + check;
                } else if matches!(task.react.phase, Phase::Waiting { .. }) {
                    // A wait op set the phase.
                } else if let Some(goal_id) = running_step {
                    task.react.phase = Phase::Running { goal_id };
                    task.react.next_check = now + check;
                } else if task.react.last.is_none() {
                    // Nothing runs and nothing was asked for: look again after a while.
                    task.react.phase = Phase::Waiting {
                        since: now,
                        until: now + check,
                    };
                }
                return;
            }
        }
        if let Some(task) = self.state.queue.get_mut(id) {
            task.react.iteration += 1;
        }
    }

    /// Approve (with `edit` = None) or edit-and-approve a pending approval.
    pub(super) fn approve(&mut self, approval_id: &str, edit: Option<&Value>) {
        let Some(pending) = self.pending_approval(approval_id) else {
            return;
        };
        let op = match (&pending.op, &edit) {
            (Op::Dispatch { skill, .. }, Some(args)) => Op::Dispatch {
                skill: skill.clone(),
                args: (*args).clone(),
            },
            (op, _) => op.clone(),
        };
        let verdict = self
            .judge(&pending.task_id, std::slice::from_ref(&op), true)
            .remove(0);
        if verdict.verdict == Verdict::Rejected {
            let status = if edit.is_some() {
                ApprovalStatus::EditRefused
            } else {
                ApprovalStatus::Rejected
            };
            self.emit(EventKind::Approval {
                approval_id: pending.id.clone(),
                task_id: pending.task_id.clone(),
                status,
                op,
                reason: verdict.reason.clone(),
            });
            if edit.is_none() {
                self.state.approvals.retain(|a| a.id != approval_id);
                self.resolve_to_decision(
                    &pending,
                    LastResult::GuardrailRejected {
                        op: pending.op.clone(),
                        reason: verdict.reason,
                    },
                );
            }
            return;
        }
        self.state.approvals.retain(|a| a.id != approval_id);
        self.node(Node::ApprovalInterrupt);
        let status = if edit.is_some() {
            ApprovalStatus::Edited
        } else {
            ApprovalStatus::Approved
        };
        let reason = if edit.is_some() {
            "edited and approved by the operator"
        } else {
            "approved by the operator"
        };
        self.emit(EventKind::Approval {
            approval_id: pending.id.clone(),
            task_id: pending.task_id.clone(),
            status,
            op: op.clone(),
            reason: reason.into(),
        });
        let task_id = pending.task_id.clone();
        // An edit of the step's own skill changes the plan, so success means the edited goal.
        if let (Op::Dispatch { skill, args }, Some(task)) =
            (&op, self.state.queue.get_mut(&task_id))
            && let Some(step) = task.plan.get_mut(task.cursor)
            && &step.skill == skill
        {
            step.args = args.clone();
        }
        // A task set aside (another runs, or the E-stop) keeps what was
        // approved until it runs again: its op waits its turn.
        if self.state.queue.active_id() != Some(task_id.as_str()) {
            if let Some(task) = self.state.queue.get_mut(&task_id) {
                task.react.approved.push(op);
            }
            return;
        }
        self.node(Node::Dispatch);
        self.dispatch_approved(&task_id, &[op]);
    }

    /// R6 for ops the operator approved: dispatched, and the task follows
    /// its step's goal (or waits on for its other approvals).
    pub(super) fn dispatch_approved(&mut self, task_id: &str, ops: &[Op]) {
        let step_goal = self.dispatch_ops(task_id, ops);
        let now = self.state.time;
        let check = self.config.kernel.progress_check_s;
        let still_waiting = self.state.approvals.iter().any(|a| a.task_id == task_id);
        if let Some(task) = self.state.queue.get_mut(task_id) {
            if still_waiting {
                return;
            }
            match step_goal {
                Some(goal_id) => {
                    task.react.phase = Phase::Running { goal_id };
                    task.react.progress.restart(now);
                    task.react.next_check = now + check;
                }
                None => task.react.phase = Phase::Ready,
            }
        }
    }

    /// Refuses a pending approval; the brain decides what follows.
    pub(super) fn reject(&mut self, approval_id: &str, reason: &str) {
        let Some(pending) = self.pending_approval(approval_id) else {
            return;
        };
        self.state.approvals.retain(|a| a.id != approval_id);
        self.node(Node::ApprovalInterrupt);
        self.emit(EventKind::Approval {
            approval_id: pending.id.clone(),
            task_id: pending.task_id.clone(),
            status: ApprovalStatus::Rejected,
            op: pending.op.clone(),
            reason: reason.to_string(),
        });
        self.resolve_to_decision(
            &pending,
            LastResult::OperatorRejected {
                op: pending.op.clone(),
                reason: reason.into(),
            },
        );
    }

    fn resolve_to_decision(&mut self, pending: &PendingApproval, last: LastResult) {
        if let Some(task) = self.state.queue.get_mut(&pending.task_id) {
            task.react.last = Some(last);
            if matches!(task.react.phase, Phase::AwaitingApproval { .. }) {
                task.react.phase = Phase::Ready;
            }
        }
    }

    /// The pending approval `approval_id`, or an `error` event listing the pending ones.
    fn pending_approval(&mut self, approval_id: &str) -> Option<PendingApproval> {
        let found = self
            .state
            .approvals
            .iter()
            .find(|a| a.id == approval_id)
            .cloned();
        if found.is_none() {
            self.unknown_approval(approval_id);
        }
        found
    }

    fn unknown_approval(&mut self, approval_id: &str) {
        let pending: Vec<&str> = self.state.approvals.iter().map(|a| a.id.as_str()).collect();
        let message = if pending.is_empty() {
            format!("no pending approval `{approval_id}`: nothing is waiting for approval")
        } else {
            format!(
                "no pending approval `{approval_id}`; pending: {}",
                pending.join(", ")
            )
        };
        self.emit(EventKind::Error {
            code: "unknown_approval".into(),
            message,
        });
    }
}
