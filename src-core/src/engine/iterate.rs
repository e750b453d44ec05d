//! K6 and the ReAct loop R1–R8: the driver of [`crate::react::step`].
//!
//! The step machine decides every transition — when an iteration is due,
//! the loop guards, the kernel's overrules, what a verdict means, the next
//! phase — and this file carries out what it asks: it builds observations,
//! asks the brain, judges ops, holds approvals, dispatches goals, records
//! events, and feeds each outcome back.

use serde_json::{Value, json};

use super::{Engine, PendingApproval};
use crate::brain::Thinking;
use crate::kernel::Task;
use crate::protocol::{
    ApprovalStatus, BrainKind, DecisionType, DecisionView, EventKind, Mode, Node, Op, SkillStatus,
    SpeechTrack, Verdict,
};
use crate::react::guardrails::{GuardContext, Judged, judge};
use crate::react::observation::{PLAN_WINDOW, PreemptObs, RunningGoalObs};
use crate::react::step::{Effect, Input, Outcome, step};
use crate::react::{LastResult, Observation, Phase};
use crate::skills::Completion;

/// How a dispatch went.
enum Dispatched {
    /// The goal runs on the robot; its result comes later.
    Running,
    /// It finished at once.
    Ended(Box<Completion>),
    /// It could not start (the task has been told).
    Refused,
}

/// Where task `task` must end, when its success is a place: a `goto`'s
/// zone, as its plan has it now (an operator's edit may have changed it).
fn goal_zone(task: &Task) -> Option<String> {
    if !matches!(task.kind, crate::kernel::TaskKind::Goto { .. }) {
        return None;
    }
    task.plan
        .iter()
        .rev()
        .find(|s| s.skill == "navigate_to")
        .and_then(|s| s.args.get("zone"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

impl Engine {
    /// K6: in EXEC or CHARGE, tick the active task's loop.
    pub(super) fn route(&mut self) {
        if !matches!(self.state.mode, Mode::Exec | Mode::Charge) {
            return;
        }
        let Some(task) = self.state.queue.active_mut() else {
            return;
        };
        let input = Input::Tick {
            now: self.state.time,
            preempt: self.state.preempt_for.is_some(),
            limits: &self.setup.config.kernel,
        };
        let (react, effects) = step(std::mem::take(&mut task.react), input);
        task.react = react;
        if !effects.is_empty() {
            let id = task.id.clone();
            self.drive(&id, effects, None);
        }
    }

    /// Feeds `input` to task `id`'s step machine and returns what it asks
    /// for (nothing when the task is gone).
    fn step(&mut self, id: &str, input: Input<'_>) -> Vec<Effect> {
        let Some(task) = self.state.queue.get_mut(id) else {
            return Vec::new();
        };
        let (react, effects) = step(std::mem::take(&mut task.react), input);
        task.react = react;
        effects
    }

    /// Carries out the step machine's effects for task `id`, in order,
    /// feeding each outcome it asked for back in, until it asks for nothing
    /// more. `obs` is the observation of the iteration under way, if any.
    fn drive(&mut self, id: &str, mut effects: Vec<Effect>, obs: Option<&Observation>) {
        let limits = self.setup.config.kernel.clone();
        let mut approval = None;
        loop {
            let mut next = None;
            for effect in effects {
                match effect {
                    Effect::Node(node) => self.node(node),
                    Effect::CountFailure => self.count_failure(id),
                    Effect::Observe { no_progress } => self.iterate(id, no_progress),
                    Effect::Think => {
                        if let Some(obs) = obs {
                            next = Some(match self.mind.brain.decide(obs, &self.mind.registry) {
                                Thinking::Done(answer) => Input::Answered { obs, answer },
                                Thinking::Pending => Input::Thinking {
                                    obs: Box::new(obs.clone()),
                                },
                            });
                        }
                    }
                    Effect::ThinkByRules => {
                        if let Some(obs) = obs {
                            next = Some(self.think_by_rules(obs));
                        }
                    }
                    Effect::Poll => self.poll_brain(id),
                    Effect::Decided {
                        iteration,
                        decision_type,
                        reason,
                        ops,
                        brain,
                    } => self.record_decision(id, iteration, decision_type, reason, ops, brain),
                    Effect::Contradicted { claim, reason } => self.log(
                        "warn",
                        &format!(
                            "kernel: the world contradicts the brain's {}: {reason}; nothing of it was done",
                            claim.as_str()
                        ),
                    ),
                    Effect::SkipStep => {
                        if let Some(t) = self.state.queue.get_mut(id) {
                            t.cursor += 1;
                            t.failures.clear();
                        }
                    }
                    Effect::Judge { decision } => {
                        let verdicts = self.judge(id, &decision.ops, false);
                        for j in &verdicts {
                            self.emit(EventKind::Guardrail {
                                task_id: id.to_string(),
                                op: j.op.clone(),
                                verdict: j.verdict,
                                reason: j.reason.clone(),
                            });
                        }
                        next = Some(Input::Judged { decision, verdicts });
                    }
                    Effect::RequestApproval(j) => approval = Some(self.request_approval(id, &j)),
                    Effect::Dispatch { ops, decision } => {
                        let step_goal = self.dispatch_ops(id, &ops);
                        let outcome = Outcome {
                            step_goal,
                            approval: approval.take(),
                            running_step: self.running_goal(id),
                            alerting: self
                                .state
                                .incidents
                                .iter()
                                .any(|i| i.acknowledged_by.is_none()),
                        };
                        next = Some(Input::Dispatched {
                            decision,
                            outcome,
                            now: self.state.time,
                            limits: &limits,
                        });
                    }
                    Effect::Halt { status, reason } => self.halt_task(id, status, &reason),
                    Effect::SetAside { reason } => self.set_aside(id, &reason),
                    Effect::Speak(text) => self.speak(&text, SpeechTrack::Answer),
                }
            }
            let Some(input) = next else {
                return;
            };
            effects = self.step(id, input);
        }
    }

    /// R2 by the rule brain, the brain's claims having been contradicted
    /// too often in a row.
    fn think_by_rules<'a>(&mut self, obs: &'a Observation) -> Input<'a> {
        self.log(
            "warn",
            &format!(
                "kernel: the brain's claims were contradicted {} times in a row: the rule brain decides this turn",
                crate::react::step::CONTRADICTIONS_BEFORE_RULES
            ),
        );
        let decision = crate::brain::rule::decide(obs, &self.mind.registry);
        Input::Answered {
            obs,
            answer: Ok((decision, BrainKind::Fallback)),
        }
    }

    /// R2's decision on record: the state's last decision and the `decision` event.
    fn record_decision(
        &mut self,
        id: &str,
        iteration: u32,
        decision_type: DecisionType,
        reason: String,
        ops: Vec<Op>,
        brain: BrainKind,
    ) {
        self.state.last_decision = Some(DecisionView {
            iteration,
            decision_type,
            reason: reason.clone(),
            brain,
        });
        self.emit(EventKind::Decision {
            task_id: id.to_string(),
            iteration,
            decision_type,
            reason,
            brain,
            ops,
        });
    }

    /// One ReAct iteration for task `id`: R1 here, the rest as the step machine asks.
    fn iterate(&mut self, id: &str, no_progress: Option<String>) {
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
        let limits = self.setup.config.kernel.clone();
        let effects = self.step(
            id,
            Input::Observed {
                obs: &obs,
                limits: &limits,
            },
        );
        self.drive(id, effects, Some(&obs));
    }

    /// Polls a brain that is still thinking about task `id`. Its answer is
    /// checked against the world as it is now; a fallback the rule brain
    /// computed for a world that has since moved is computed again.
    pub(super) fn poll_brain(&mut self, id: &str) {
        let mut events = Vec::new();
        let thinking = self.mind.brain.poll(&mut events);
        for e in events {
            self.emit(e);
        }
        let Thinking::Done(mut answer) = thinking else {
            return;
        };
        let Some(task) = self.state.queue.get(id) else {
            return;
        };
        let asked = match &task.react.phase {
            Phase::Deciding { observation, .. } => Some(observation.as_ref().clone()),
            _ => None,
        };
        let no_progress = asked.as_ref().and_then(|o| o.no_progress.clone());
        let Some(mut now) = self.observe(id, no_progress) else {
            return;
        };
        if let Some(asked) = &asked {
            if now.last_result.is_none() {
                now.last_result.clone_from(&asked.last_result);
            }
            if let (Ok((_, BrainKind::Fallback)), Some(why)) = (&answer, now.moved_since(asked)) {
                self.log(
                    "info",
                    &format!(
                        "the world moved while the model thought ({why}): the rule brain decides again on what it says now"
                    ),
                );
                answer = Ok((
                    crate::brain::rule::decide(&now, &self.mind.registry),
                    BrainKind::Fallback,
                ));
                // The new result is in the decision just made: consumed.
                if let Some(t) = self.state.queue.get_mut(id) {
                    t.react.last = None;
                }
            }
        }
        let effects = self.step(id, Input::Polled { answer, now: &now });
        self.drive(id, effects, None);
    }

    /// K6 found the running step making no progress: one more failure of its skill.
    fn count_failure(&mut self, id: &str) {
        if let Some(task) = self.state.queue.get_mut(id)
            && let Some(skill) = task.current_step().map(|s| s.skill.clone())
        {
            *task.failures.entry(skill).or_insert(0) += 1;
        }
    }

    /// A goal of task `id` still running, if any.
    fn running_goal(&self, id: &str) -> Option<String> {
        self.mind
            .runner
            .running()
            .iter()
            .find(|g| g.task_id.as_deref() == Some(id))
            .map(|g| g.goal_id.clone())
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
            goal_zone: goal_zone(task),
            plan: task.plan_ahead(PLAN_WINDOW),
            step: task.cursor,
            plan_len: task.plan.len(),
            iteration: task.react.iteration + 1,
            zone: t.zone.clone(),
            battery_pct: t.battery_pct,
            charging: t.charging,
            battery_resume_pct: self.setup.config.kernel.battery_resume_pct,
            distance_to_target: t.distance_to_target,
            running: self
                .mind
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
            replan_wait_s: self.setup.config.kernel.replan_wait_s,
            vision: self.state.shared.get("last_vision_result").cloned(),
        })
    }

    fn judge(&self, id: &str, ops: &[Op], approved: bool) -> Vec<Judged> {
        let home = crate::hci::lock(&self.home.handle);
        let gate = home.gate();
        let ctx = GuardContext {
            registry: &self.mind.registry,
            world: &self.setup.world,
            policy: &self.setup.config.policy,
            mode: self.state.mode,
            runner: &self.mind.runner,
            task_id: id,
            home: Some(&gate),
            start: crate::policy::motion::Start {
                at: (!self.state.telemetry.pose_unknown).then(|| self.state.telemetry.pose.point()),
                blocked: &self.state.telemetry.blocked_passages,
                open: Some(&self.setup.grid),
            },
            only_asked: self
                .state
                .queue
                .get(id)
                .and_then(crate::kernel::Task::only_asked),
        };
        judge(ops, &ctx, approved)
    }

    fn request_approval(&mut self, task_id: &str, j: &Judged) -> String {
        self.state.approvals_created += 1;
        let id = format!("a{}", self.state.approvals_created);
        let risk = match &j.op {
            Op::Dispatch { skill, .. } => self
                .mind
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
            requested_by: self.state.queue.get(task_id).and_then(|t| t.origin.clone()),
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
            let mut home = crate::hci::lock(&self.home.handle);
            home.origin.clone_from(&pending.requested_by);
            home.audit_held(skill, args, plan, &j.reason);
        }
        self.emit(EventKind::Approval {
            approval_id: id.clone(),
            task_id: task_id.to_string(),
            status: ApprovalStatus::Requested,
            op: j.op.clone(),
            reason: j.reason.clone(),
            requested_by: pending.requested_by.clone(),
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
                    let goal_id = crate::store::ledger::goal_id(&self.setup.thread_id, step, i);
                    self.ledger_dispatch(&goal_id, step, i, skill);
                    let holds_base = self
                        .mind
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
        // A home tool audits its call with the task's origin.
        let origin = self.state.queue.get(task_id).and_then(|t| t.origin.clone());
        crate::hci::lock(&self.home.handle).origin = origin;
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
                requested_by: pending.requested_by.clone(),
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
            requested_by: pending.requested_by.clone(),
        });
        let task_id = pending.task_id.clone();
        // A task only asked for (a Home Assistant press) is the approving
        // operator's from now on.
        if let Some(task) = self.state.queue.get_mut(&task_id)
            && task.only_asked().is_some()
        {
            task.vouched_by.clone_from(&self.traffic.cause);
        }
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
        let limits = self.setup.config.kernel.clone();
        let input = Input::Approved {
            step_goal,
            still_waiting: self.state.approvals.iter().any(|a| a.task_id == task_id),
            now: self.state.time,
            limits: &limits,
        };
        let effects = self.step(task_id, input);
        self.drive(task_id, effects, None);
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
            requested_by: pending.requested_by.clone(),
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
        let effects = self.step(&pending.task_id, Input::Refused { last });
        self.drive(&pending.task_id, effects, None);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brain::{Brain, BrainError};
    use crate::config::Config;
    use crate::protocol::{Command, Event, Origin, TaskStatus};
    use crate::react::Decision;
    use crate::skills::SkillRegistry;
    use crate::world::World;

    /// A model that answers the first decision at once and thinks about the
    /// second for `ticks` ticks, then fails, leaving the rule brain's answer
    /// for the world it was asked about — as `LlmBrain` does.
    struct SlowModel {
        asked: u32,
        ticks: u32,
        stale: Option<Decision>,
    }

    impl Brain for SlowModel {
        fn kind(&self) -> BrainKind {
            BrainKind::Model
        }

        fn decide(&mut self, obs: &Observation, registry: &SkillRegistry) -> Thinking {
            self.asked += 1;
            let rules = crate::brain::rule::decide(obs, registry);
            if self.asked == 2 {
                self.stale = Some(rules);
                return Thinking::Pending;
            }
            Thinking::Done(Ok((rules, BrainKind::Rule)))
        }

        fn poll(&mut self, _events: &mut Vec<EventKind>) -> Thinking {
            self.ticks = self.ticks.saturating_sub(1);
            match (self.ticks, self.stale.take()) {
                (0, Some(stale)) => Thinking::Done(Ok((stale, BrainKind::Fallback))),
                (_, stale) => {
                    self.stale = stale;
                    if self.stale.is_some() {
                        Thinking::Pending
                    } else {
                        Thinking::Done(Err(BrainError::Unavailable("nothing pending".into())))
                    }
                }
            }
        }
    }

    /// Issue 40: a fallback computed at the progress check was applied after
    /// the robot had arrived, and the next decision sent `navigate_to` again.
    #[test]
    fn a_step_that_ends_while_the_model_thinks_counts_and_a_stale_fallback_is_redone() {
        let config = Config::default();
        let apartment = World::builtin("apartment").unwrap();
        let mut engine = super::Engine::simulated(&config, apartment).unwrap();
        // Thinking for 60 sim seconds: the kitchen is reached meanwhile.
        engine.set_brain(Box::new(SlowModel {
            asked: 0,
            ticks: 600,
            stale: None,
        }));
        engine.submit(
            Command::Say {
                text: "go to the kitchen".into(),
            },
            Origin::console(),
        );
        let mut events: Vec<Event> = Vec::new();
        while engine.time() < 120.0 {
            engine.tick(&mut events);
        }
        let sent = events
            .iter()
            .filter(|e| {
                matches!(&e.kind, EventKind::Skill { skill, status: SkillStatus::Dispatched, .. } if skill == "navigate_to")
            })
            .count();
        assert_eq!(sent, 1, "navigate_to was sent again");
        let last = events.iter().rev().find_map(|e| match &e.kind {
            EventKind::Decision {
                decision_type,
                brain,
                reason,
                ..
            } => Some((*decision_type, *brain, reason.clone())),
            _ => None,
        });
        assert_eq!(
            last.map(|(d, b, _)| (d, b)),
            Some((DecisionType::Finish, BrainKind::Fallback))
        );
        assert!(events.iter().any(|e| matches!(&e.kind, EventKind::Log { message, .. } if message.starts_with("the world moved while the model thought (the plan moved from step 1 to step 2)"))));
        assert_eq!(
            engine.state().queue.last().unwrap().status,
            TaskStatus::Succeeded
        );
        assert_eq!(engine.state().telemetry.zone.as_deref(), Some("kitchen"));
    }
}
