//! The loop's transitions as one pure function (seed 003 K6, R2–R5, R8):
//! [`step`] takes a task's [`ReactState`] and one [`Input`] — the tick, the
//! observation, the brain's answer, the guardrails' verdicts, what dispatch
//! started — and returns the next state and the [`Effect`]s to carry out,
//! in order. Nothing here does IO, reads a clock or touches another task:
//! the engine (`engine/iterate.rs`) is the driver that builds observations,
//! asks the brain, judges, dispatches and records, and feeds each outcome
//! back as the next input. That is what lets the loop be tested transition
//! by transition (below) and resumed from a checkpoint of `ReactState` alone.
//!
//! One iteration runs as
//! `Tick` → [`Effect::Observe`] → `Observed` → [`Effect::Think`] →
//! `Answered` (or `Thinking`, then `Polled` on a later tick) →
//! [`Effect::Judge`] → `Judged` → [`Effect::Dispatch`] → `Dispatched`.
//! Values the driver must hand back (the decision) travel inside the effect
//! that asks for the outcome, so the machine keeps nothing between inputs
//! but the task's own state.

use crate::config::KernelConfig;
use crate::protocol::{BrainKind, DecisionType, Node, Op, TaskStatus, Verdict};
use crate::react::BrainError;
use crate::react::guardrails::Judged;
use crate::react::{Decision, LastResult, Observation, Phase, ReactState, claims, guards};

/// Slack on sim-time comparisons (ticks add up `tick_s` in floating point).
const EPS: f64 = 1e-9;

/// A brain's claims the world contradicted in a row before the rule brain
/// decides a turn in its place (the contradiction is told to the brain
/// first; a brain that keeps claiming what is not so is not asked again
/// until the rules have moved the task on).
pub const CONTRADICTIONS_BEFORE_RULES: u32 = 2;

/// What the loop is told.
#[derive(Debug)]
pub enum Input<'a> {
    /// K6: a tick reached the task, active in EXEC or CHARGE.
    Tick {
        /// Sim time.
        now: f64,
        /// A higher-priority user task waits for this one to switch.
        preempt: bool,
        /// Progress checks and loop guards.
        limits: &'a KernelConfig,
    },
    /// R1: the observation the driver built for [`Effect::Observe`].
    Observed {
        /// It.
        obs: &'a Observation,
        /// The loop guards' caps.
        limits: &'a KernelConfig,
    },
    /// R2: the brain answered [`Effect::Think`] at once.
    Answered {
        /// What it was shown.
        obs: &'a Observation,
        /// Its answer.
        answer: Result<(Decision, BrainKind), BrainError>,
    },
    /// R2: the brain is still thinking about `obs` (the robot goes on; the
    /// driver polls on later ticks).
    Thinking {
        /// What it was shown.
        obs: Box<Observation>,
    },
    /// R2: a brain that was thinking answered [`Effect::Poll`].
    Polled {
        /// Its answer.
        answer: Result<(Decision, BrainKind), BrainError>,
        /// The world as it is now (the robot went on while the brain
        /// thought): what the answer's claims are checked against.
        now: &'a Observation,
    },
    /// R4: the guardrails' verdicts on the decision's ops, in op order.
    Judged {
        /// The decision [`Effect::Judge`] carried.
        decision: Decision,
        /// One per op.
        verdicts: Vec<Judged>,
    },
    /// R5–R6 done: what the approvals and the dispatch left behind.
    Dispatched {
        /// The decision [`Effect::Dispatch`] carried.
        decision: Decision,
        /// What happened.
        outcome: Outcome,
        /// Sim time.
        now: f64,
        /// Progress check interval.
        limits: &'a KernelConfig,
    },
    /// R5: ops the operator approved were dispatched (the task is active).
    Approved {
        /// The goal that carries the task's step, if one started.
        step_goal: Option<String>,
        /// The task still has approvals pending.
        still_waiting: bool,
        /// Sim time.
        now: f64,
        /// Progress check interval.
        limits: &'a KernelConfig,
    },
    /// R5: the operator or the guardrails refused an approval: the brain
    /// decides what follows.
    Refused {
        /// What the next observation reports.
        last: LastResult,
    },
}

/// What R5 and R6 left behind, for R8.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The goal that carries the task's step, if dispatch started one.
    pub step_goal: Option<String>,
    /// The last approval requested, if any.
    pub approval: Option<String>,
    /// A goal of this task still running (started by an earlier iteration).
    pub running_step: Option<String>,
    /// An alert waits for an operator's acknowledgement.
    pub alerting: bool,
}

/// What the driver does, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A state-changing node ran: the step number advances.
    Node(Node),
    /// K6: the running step made no progress: count a failure of its skill.
    CountFailure,
    /// R1: build the observation and answer [`Input::Observed`].
    Observe {
        /// The evidence of no progress, if any.
        no_progress: Option<String>,
    },
    /// R2: ask the brain about the observation; answer [`Input::Answered`]
    /// or [`Input::Thinking`].
    Think,
    /// R2: poll the thinking brain; answer [`Input::Polled`] when it is done.
    Poll,
    /// R2: the brain's claims were contradicted
    /// [`CONTRADICTIONS_BEFORE_RULES`] times in a row: the rule brain
    /// decides about the observation instead; answer [`Input::Answered`].
    ThinkByRules,
    /// R2: the world contradicts what the decision claimed (after its
    /// `Decided`): nothing of it is carried out, and the next observation
    /// tells the brain why.
    Contradicted {
        /// The decision type that claimed it.
        claim: DecisionType,
        /// What the world says instead.
        reason: String,
    },
    /// R2: record the decision as it stands after the kernel's overrules
    /// (the `decision` event).
    Decided {
        /// Iteration number.
        iteration: u32,
        /// Its type.
        decision_type: DecisionType,
        /// Why.
        reason: String,
        /// Its ops, before the guardrails.
        ops: Vec<Op>,
        /// Who made it.
        brain: BrainKind,
    },
    /// R3: the plan patch skips the current step.
    SkipStep,
    /// R4: judge the decision's ops; answer [`Input::Judged`].
    Judge {
        /// The decision, handed back with the verdicts.
        decision: Decision,
    },
    /// R5: hold an op for an operator (the driver remembers the last
    /// approval id for [`Outcome::approval`]).
    RequestApproval(Judged),
    /// R6: carry out the allowed ops; answer [`Input::Dispatched`].
    Dispatch {
        /// The allowed ops, in order.
        ops: Vec<Op>,
        /// The decision, handed back with the outcome.
        decision: Decision,
    },
    /// R8: stop the task (its goals cancelled, its approvals withdrawn).
    Halt {
        /// Its new status.
        status: TaskStatus,
        /// Why.
        reason: String,
    },
    /// R8: set the task aside to resume later at the same step.
    SetAside {
        /// Why.
        reason: String,
    },
    /// Say this to the operator.
    Speak(String),
}

/// The next state of a task's loop and what to do, in order.
pub fn step(mut state: ReactState, input: Input<'_>) -> (ReactState, Vec<Effect>) {
    let mut effects = Vec::new();
    match input {
        Input::Tick {
            now,
            preempt,
            limits,
        } => wake(&mut state, now, preempt, limits, &mut effects),
        Input::Observed { obs, limits } => {
            // The last result is in the observation: consumed.
            state.last = None;
            // The loop guards speak first: the brain never sees a tripped loop.
            match guards::tripped(obs, limits) {
                Some(reason) => decided(
                    &mut state,
                    obs,
                    Ok((
                        Decision::new(DecisionType::AskHuman, reason),
                        BrainKind::Kernel,
                    )),
                    &mut effects,
                ),
                None if state.contradicted >= CONTRADICTIONS_BEFORE_RULES => {
                    effects.push(Effect::ThinkByRules);
                }
                None => effects.push(Effect::Think),
            }
        }
        Input::Answered { obs, answer } => decided(&mut state, obs, answer, &mut effects),
        Input::Thinking { obs } => {
            let step_goal = match std::mem::take(&mut state.phase) {
                Phase::Running { goal_id } => Some(goal_id),
                _ => None,
            };
            state.phase = Phase::Deciding {
                observation: obs,
                step_goal,
            };
        }
        Input::Polled { answer, now } => {
            if let Phase::Deciding { .. } = std::mem::replace(&mut state.phase, Phase::Ready) {
                decided(&mut state, now, answer, &mut effects);
            }
        }
        Input::Judged { decision, verdicts } => {
            judged(&mut state, decision, verdicts, &mut effects);
        }
        Input::Dispatched {
            decision,
            outcome,
            now,
            limits,
        } => stop_or_loop(&mut state, decision, outcome, now, limits, &mut effects),
        Input::Approved {
            step_goal,
            still_waiting,
            now,
            limits,
        } => {
            if !still_waiting {
                match step_goal {
                    Some(goal_id) => run(&mut state, goal_id, now, limits),
                    None => state.phase = Phase::Ready,
                }
            }
        }
        Input::Refused { last } => {
            state.last = Some(last);
            if matches!(state.phase, Phase::AwaitingApproval { .. }) {
                state.phase = Phase::Ready;
            }
        }
    }
    (state, effects)
}

/// K6: whether an iteration is due, and the bookkeeping before it.
fn wake(
    state: &mut ReactState,
    now: f64,
    preempt: bool,
    limits: &KernelConfig,
    effects: &mut Vec<Effect>,
) {
    let no_progress = match &state.phase {
        Phase::Deciding { .. } => {
            effects.push(Effect::Poll);
            return;
        }
        Phase::Halted => return,
        Phase::Ready => None,
        Phase::Waiting { since, until } if now >= until - EPS => {
            if state.last.is_none() {
                state.last = Some(LastResult::Waited {
                    seconds: until - since,
                });
            }
            None
        }
        Phase::Running { .. } if now >= state.next_check - EPS => {
            let evidence =
                state
                    .progress
                    .stalled(now, limits.no_progress_window_s, limits.no_progress_min_m);
            if evidence.is_some() {
                effects.push(Effect::CountFailure);
            }
            evidence
        }
        // Not due, but a higher-priority task waits: decide now (to switch).
        Phase::Waiting { .. } | Phase::Running { .. } | Phase::AwaitingApproval { .. } => {
            if !preempt {
                return;
            }
            None
        }
    };
    effects.push(Effect::Observe { no_progress });
}

/// R2's answer: the kernel's overrules, the world's check of its claims,
/// then R3 and the call for R4.
fn decided(
    state: &mut ReactState,
    obs: &Observation,
    answer: Result<(Decision, BrainKind), BrainError>,
    effects: &mut Vec<Effect>,
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
    effects.push(Effect::Node(Node::Decide));
    effects.push(Effect::Decided {
        iteration: obs.iteration,
        decision_type: decision.decision_type,
        reason: decision.reason.clone(),
        ops: decision.ops.clone(),
        brain,
    });
    // A brain's word is not the world's: the rules and the kernel are
    // trusted, a model's (or a script's) claims are checked.
    let claimed = matches!(brain, BrainKind::Model | BrainKind::Scripted)
        .then(|| claims::contradiction(&decision, obs))
        .flatten();
    if let Some(reason) = claimed {
        let claim = decision.decision_type;
        effects.push(Effect::Contradicted {
            claim,
            reason: reason.clone(),
        });
        state.last = Some(LastResult::Contradicted { claim, reason });
        state.contradicted += 1;
        state.iteration += 1;
        state.phase = Phase::Ready;
        return;
    }
    state.contradicted = 0;
    // R3: compile the plan patch.
    effects.push(Effect::Node(Node::CompileOps));
    if decision.plan_patch.as_ref().is_some_and(|p| p.skip_current) {
        effects.push(Effect::SkipStep);
    }
    effects.push(Effect::Node(Node::Guardrails));
    effects.push(Effect::Judge { decision });
}

/// Whether a decision keeps the loop going (the others stop or set aside the task).
fn loops(decision_type: DecisionType) -> bool {
    matches!(
        decision_type,
        DecisionType::Continue | DecisionType::Replan | DecisionType::Retry
    )
}

/// R4's verdicts: a refused op sends a looping decision back to the brain;
/// otherwise R5 holds what needs an operator and R6 gets what is allowed.
fn judged(
    state: &mut ReactState,
    decision: Decision,
    verdicts: Vec<Judged>,
    effects: &mut Vec<Effect>,
) {
    if loops(decision.decision_type)
        && let Some(r) = verdicts.iter().find(|j| j.verdict == Verdict::Rejected)
    {
        state.last = Some(LastResult::GuardrailRejected {
            op: r.op.clone(),
            reason: r.reason.clone(),
        });
        state.phase = Phase::Ready;
        return;
    }
    let mut allowed = Vec::with_capacity(verdicts.len());
    for j in verdicts {
        match j.verdict {
            Verdict::Allowed => allowed.push(j.op),
            Verdict::NeedsApproval => {
                effects.push(Effect::Node(Node::ApprovalInterrupt));
                effects.push(Effect::RequestApproval(j));
            }
            Verdict::Rejected => {}
        }
    }
    effects.push(Effect::Node(Node::Dispatch));
    effects.push(Effect::Dispatch {
        ops: allowed,
        decision,
    });
}

/// R8: the decision's effect on the task, and the loop's next phase.
fn stop_or_loop(
    state: &mut ReactState,
    decision: Decision,
    outcome: Outcome,
    now: f64,
    limits: &KernelConfig,
    effects: &mut Vec<Effect>,
) {
    effects.push(Effect::Node(Node::StopOrLoop));
    state.iteration += 1;
    let reason = decision.reason;
    match decision.decision_type {
        DecisionType::Finish => effects.push(Effect::Halt {
            status: TaskStatus::Succeeded,
            reason,
        }),
        DecisionType::Abort => effects.push(Effect::Halt {
            status: TaskStatus::Aborted,
            reason,
        }),
        DecisionType::AskHuman => {
            let ask = if outcome.alerting {
                "I will stay here until an operator says \"acknowledge\".".to_string()
            } else {
                format!(
                    "I need help: {reason}. Say \"retry\" to try again or \"cancel\" to give up."
                )
            };
            effects.push(Effect::Halt {
                status: TaskStatus::WaitingHuman,
                reason,
            });
            effects.push(Effect::Speak(ask));
        }
        DecisionType::SwitchTask => effects.push(Effect::SetAside { reason }),
        DecisionType::Continue | DecisionType::Replan | DecisionType::Retry => {
            if let Some(approval_id) = outcome.approval {
                state.phase = Phase::AwaitingApproval { approval_id };
            } else if let Some(goal_id) = outcome.step_goal {
                run(state, goal_id, now, limits);
            } else if matches!(state.phase, Phase::Waiting { .. }) {
                // A wait op set the phase.
            } else if let Some(goal_id) = outcome.running_step {
                state.phase = Phase::Running { goal_id };
                state.next_check = now + limits.progress_check_s;
            } else if state.last.is_none() {
                // Nothing runs and nothing was asked for: look again after a while.
                state.phase = Phase::Waiting {
                    since: now,
                    until: now + limits.progress_check_s,
                };
            }
        }
    }
}

/// The task follows a goal that has just started carrying its step.
fn run(state: &mut ReactState, goal_id: String, now: f64, limits: &KernelConfig) {
    state.phase = Phase::Running { goal_id };
    state.progress.restart(now);
    state.next_check = now + limits.progress_check_s;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::react::PlanPatch;
    use crate::react::observation::{PreemptObs, RunningGoalObs, sample};

    fn limits() -> KernelConfig {
        KernelConfig {
            max_iterations: 5,
            max_skill_failures: 2,
            ..KernelConfig::default()
        }
    }

    /// The sample `goto kitchen` after its step succeeded, the robot in the kitchen.
    fn arrived() -> Observation {
        let mut obs = sample();
        obs.goal_zone = Some("kitchen".into());
        obs.plan.clear();
        obs.step = 1;
        obs.zone = Some("kitchen".into());
        obs
    }

    fn in_phase(phase: Phase) -> ReactState {
        ReactState {
            phase,
            ..ReactState::default()
        }
    }

    fn go(zone: &str) -> Op {
        Op::Dispatch {
            skill: "navigate_to".into(),
            args: json!({ "zone": zone }),
        }
    }

    fn verdict(op: &Op, verdict: Verdict) -> Judged {
        Judged {
            op: op.clone(),
            verdict,
            reason: format!("{verdict:?}"),
        }
    }

    fn tick(state: ReactState, now: f64, preempt: bool) -> (ReactState, Vec<Effect>) {
        step(
            state,
            Input::Tick {
                now,
                preempt,
                limits: &limits(),
            },
        )
    }

    fn answered(obs: &Observation, decision: Decision) -> Vec<Effect> {
        let input = Input::Answered {
            obs,
            answer: Ok((decision, BrainKind::Rule)),
        };
        step(ReactState::default(), input).1
    }

    /// The decision R2 settled on (its `Decided` effect), and the one handed to R4.
    fn decision_of(effects: &[Effect]) -> (DecisionType, String, Vec<Op>, BrainKind) {
        let Some(Effect::Decided {
            decision_type,
            reason,
            ops,
            brain,
            ..
        }) = effects.iter().find(|e| matches!(e, Effect::Decided { .. }))
        else {
            panic!("no decision in {effects:?}");
        };
        (*decision_type, reason.clone(), ops.clone(), *brain)
    }

    fn judged(
        state: ReactState,
        decision: &Decision,
        verdicts: Vec<Judged>,
    ) -> (ReactState, Vec<Effect>) {
        let decision = decision.clone();
        step(state, Input::Judged { decision, verdicts })
    }

    fn dispatched(
        state: ReactState,
        decision: Decision,
        outcome: Outcome,
    ) -> (ReactState, Vec<Effect>) {
        step(
            state,
            Input::Dispatched {
                decision,
                outcome,
                now: 20.0,
                limits: &limits(),
            },
        )
    }

    // K6: when an iteration is due.

    #[test]
    fn a_ready_task_observes_at_once_and_a_halted_one_never() {
        assert_eq!(
            tick(in_phase(Phase::Ready), 1.0, false).1,
            [Effect::Observe { no_progress: None }]
        );
        assert_eq!(tick(in_phase(Phase::Halted), 1.0, true).1, []);
    }

    #[test]
    fn a_wait_ends_on_time_and_reports_how_long_it_was() {
        let waiting = in_phase(Phase::Waiting {
            since: 2.0,
            until: 5.0,
        });
        let (state, effects) = tick(waiting.clone(), 4.9, false);
        assert_eq!((state, effects), (waiting.clone(), vec![]));
        // Floating-point ticks that land a hair early still end the wait.
        let (state, effects) = tick(waiting.clone(), 5.0 - 1e-12, false);
        assert_eq!(state.last, Some(LastResult::Waited { seconds: 3.0 }));
        assert_eq!(effects, [Effect::Observe { no_progress: None }]);
        // A result already waiting to be observed is not overwritten.
        let mut failed = waiting;
        failed.last = Some(LastResult::Cancelled {
            skill: "watch".into(),
        });
        let (state, _) = tick(failed.clone(), 6.0, false);
        assert_eq!(state.last, failed.last);
    }

    #[test]
    fn a_running_step_is_checked_on_schedule_and_a_stall_counts_as_a_failure() {
        let mut running = in_phase(Phase::Running {
            goal_id: "g1".into(),
        });
        running.next_check = 10.0;
        assert_eq!(tick(running.clone(), 9.0, false).1, []);
        // Started at 0 with no feedback since: stalled over the 8 s window.
        assert_eq!(
            tick(running.clone(), 10.0, false).1,
            [
                Effect::CountFailure,
                Effect::Observe {
                    no_progress: Some("no feedback for 8 s".into())
                }
            ]
        );
        // Within the window: a check, no evidence.
        running.progress.restart(5.0);
        assert_eq!(
            tick(running, 10.0, false).1,
            [Effect::Observe { no_progress: None }]
        );
    }

    #[test]
    fn a_waiting_preemption_wakes_a_loop_that_is_not_due() {
        for phase in [
            Phase::Waiting {
                since: 0.0,
                until: 100.0,
            },
            Phase::Running {
                goal_id: "g1".into(),
            },
            Phase::AwaitingApproval {
                approval_id: "a1".into(),
            },
        ] {
            let mut state = in_phase(phase);
            state.next_check = 100.0;
            assert_eq!(tick(state.clone(), 1.0, false).1, []);
            assert_eq!(
                tick(state, 1.0, true).1,
                [Effect::Observe { no_progress: None }]
            );
        }
    }

    #[test]
    fn a_thinking_brain_is_polled_each_tick() {
        let deciding = in_phase(Phase::Deciding {
            observation: Box::new(sample()),
            step_goal: None,
        });
        let (state, effects) = tick(deciding.clone(), 1.0, true);
        assert_eq!((state, effects), (deciding, vec![Effect::Poll]));
    }

    // R2: the loop guards, the brain, the kernel's overrules.

    #[test]
    fn an_observation_consumes_the_last_result_and_asks_the_brain() {
        let mut state = in_phase(Phase::Ready);
        state.last = Some(LastResult::Waited { seconds: 1.0 });
        let (state, effects) = step(
            state,
            Input::Observed {
                obs: &sample(),
                limits: &limits(),
            },
        );
        assert_eq!(state.last, None);
        assert_eq!(effects, [Effect::Think]);
    }

    #[test]
    fn the_iteration_cap_asks_the_operator_without_the_brain() {
        let mut obs = sample();
        obs.iteration = 6;
        let (_, effects) = step(
            ReactState::default(),
            Input::Observed {
                obs: &obs,
                limits: &limits(),
            },
        );
        assert!(!effects.contains(&Effect::Think));
        let (kind, reason, _, brain) = decision_of(&effects);
        assert_eq!((kind, brain), (DecisionType::AskHuman, BrainKind::Kernel));
        assert_eq!(
            reason,
            "iteration cap reached: 5 iterations without finishing go to kitchen"
        );
    }

    #[test]
    fn a_skill_failing_again_and_again_asks_the_operator() {
        let mut obs = sample();
        obs.failures = 2;
        let (_, effects) = step(
            ReactState::default(),
            Input::Observed {
                obs: &obs,
                limits: &limits(),
            },
        );
        let (kind, reason, _, brain) = decision_of(&effects);
        assert_eq!((kind, brain), (DecisionType::AskHuman, BrainKind::Kernel));
        assert_eq!(reason, "navigate_to failed 2 times in a row (cap 2)");
    }

    #[test]
    fn a_decision_runs_r2_to_r4_in_order() {
        let decision = Decision::new(DecisionType::Continue, "go").with_ops([go("kitchen")]);
        assert_eq!(
            answered(&sample(), decision.clone()),
            [
                Effect::Node(Node::Decide),
                Effect::Decided {
                    iteration: 1,
                    decision_type: DecisionType::Continue,
                    reason: "go".into(),
                    ops: vec![go("kitchen")],
                    brain: BrainKind::Rule,
                },
                Effect::Node(Node::CompileOps),
                Effect::Node(Node::Guardrails),
                Effect::Judge { decision },
            ]
        );
    }

    #[test]
    fn a_replan_that_skips_the_step_moves_the_plan_on() {
        let decision = Decision::new(DecisionType::Replan, "unreachable")
            .with_patch(PlanPatch { skip_current: true });
        let effects = answered(&sample(), decision);
        let compile = effects
            .iter()
            .position(|e| *e == Effect::Node(Node::CompileOps))
            .unwrap();
        assert_eq!(effects[compile + 1], Effect::SkipStep);
    }

    #[test]
    fn a_failed_brain_becomes_the_kernels_ask_human() {
        let input = Input::Answered {
            obs: &sample(),
            answer: Err(BrainError::Unavailable("timeout".into())),
        };
        let (kind, reason, ops, brain) = decision_of(&step(ReactState::default(), input).1);
        assert_eq!((kind, brain), (DecisionType::AskHuman, BrainKind::Kernel));
        assert_eq!(reason, "the brain failed: brain unavailable: timeout");
        assert!(ops.is_empty());
    }

    #[test]
    fn a_claim_the_world_contradicts_goes_back_to_the_brain_then_to_the_rules() {
        let mut obs = sample();
        obs.goal_zone = Some("kitchen".into());
        let lie = || {
            Ok((
                Decision::new(DecisionType::Finish, "done").with_ops([go("moon")]),
                BrainKind::Model,
            ))
        };
        let (state, effects) = step(
            ReactState::default(),
            Input::Answered {
                obs: &obs,
                answer: lie(),
            },
        );
        let reason = "FINISH, but step 1/1 (navigate_to {\"zone\":\"kitchen\"}) has not succeeded";
        // The lie is on record, nothing of it runs, and the brain is told why.
        assert_eq!(decision_of(&effects).0, DecisionType::Finish);
        assert_eq!(
            effects.last(),
            Some(&Effect::Contradicted {
                claim: DecisionType::Finish,
                reason: reason.into()
            })
        );
        assert!(
            !effects
                .iter()
                .any(|e| matches!(e, Effect::Judge { .. } | Effect::Halt { .. }))
        );
        assert_eq!(
            state.last,
            Some(LastResult::Contradicted {
                claim: DecisionType::Finish,
                reason: reason.into()
            })
        );
        assert_eq!(
            (state.phase.clone(), state.iteration, state.contradicted),
            (Phase::Ready, 1, 1)
        );
        let observed = |state: ReactState| {
            step(
                state,
                Input::Observed {
                    obs: &obs,
                    limits: &limits(),
                },
            )
        };
        let (state, effects) = observed(state);
        assert_eq!(
            effects,
            [Effect::Think],
            "told once, the brain is asked again"
        );
        let (state, _) = step(
            state,
            Input::Answered {
                obs: &obs,
                answer: lie(),
            },
        );
        assert_eq!(state.contradicted, 2);
        let (state, effects) = observed(state);
        assert_eq!(effects, [Effect::ThinkByRules], "twice: the rules decide");
        // The rules' answer is believed, and the count starts again.
        let rules = Decision::new(DecisionType::Continue, "start").with_ops([go("kitchen")]);
        let (state, effects) = step(
            state,
            Input::Answered {
                obs: &obs,
                answer: Ok((rules.clone(), BrainKind::Fallback)),
            },
        );
        assert_eq!(effects.last(), Some(&Effect::Judge { decision: rules }));
        assert_eq!(state.contradicted, 0);
    }

    #[test]
    fn only_the_rules_and_the_kernel_are_taken_at_their_word() {
        for brain in [BrainKind::Rule, BrainKind::Fallback, BrainKind::Kernel] {
            let input = Input::Answered {
                obs: &sample(),
                answer: Ok((Decision::new(DecisionType::Finish, "done"), brain)),
            };
            let effects = step(ReactState::default(), input).1;
            assert!(
                matches!(effects.last(), Some(Effect::Judge { .. })),
                "{brain:?}"
            );
        }
        let input = Input::Answered {
            obs: &sample(),
            answer: Ok((
                Decision::new(DecisionType::Abort, "bored"),
                BrainKind::Scripted,
            )),
        };
        let effects = step(ReactState::default(), input).1;
        assert!(matches!(effects.last(), Some(Effect::Contradicted { .. })));
    }

    #[test]
    fn a_brain_that_ignores_a_preemption_is_overruled() {
        let mut obs = sample();
        obs.preempt = Some(PreemptObs {
            task_id: "t2".into(),
            title: "patrol".into(),
            reason: "priority user > main".into(),
        });
        obs.running.push(RunningGoalObs {
            goal_id: "g1".into(),
            skill: "navigate_to".into(),
            args: json!({ "zone": "kitchen" }),
            feedback: None,
        });
        let continuing = Decision::new(DecisionType::Continue, "on my way");
        let (kind, reason, ops, brain) = decision_of(&answered(&obs, continuing));
        assert_eq!((kind, brain), (DecisionType::SwitchTask, BrainKind::Rule));
        assert_eq!(
            reason,
            "kernel: a higher-priority task waits; CONTINUE overruled"
        );
        assert_eq!(
            ops,
            [Op::Cancel {
                goal_id: "g1".into()
            }]
        );
        // A brain that switches keeps its own words and ops.
        let switching = Decision::new(DecisionType::SwitchTask, "the patrol first");
        let (_, reason, ops, _) = decision_of(&answered(&obs, switching));
        assert_eq!((reason.as_str(), ops.len()), ("the patrol first", 0));
    }

    #[test]
    fn a_slow_brain_keeps_its_observation_until_it_answers() {
        let (state, effects) = step(
            in_phase(Phase::Running {
                goal_id: "g1".into(),
            }),
            Input::Thinking {
                obs: Box::new(sample()),
            },
        );
        assert_eq!(effects, []);
        assert!(matches!(
            &state.phase,
            Phase::Deciding { step_goal: Some(g), .. } if g == "g1"
        ));
        let answer = Ok((
            Decision::new(DecisionType::Finish, "there"),
            BrainKind::Model,
        ));
        // Checked against the world as it is when the answer comes: arrived.
        let now = arrived();
        let (state, effects) = step(state, Input::Polled { answer, now: &now });
        assert_eq!(state.phase, Phase::Ready);
        assert_eq!(
            decision_of(&effects),
            (
                DecisionType::Finish,
                "there".into(),
                vec![],
                BrainKind::Model
            )
        );
        // An answer for a task no longer deciding is dropped.
        let answer = Ok((
            Decision::new(DecisionType::Finish, "late"),
            BrainKind::Model,
        ));
        let now = arrived();
        let (state, effects) = step(in_phase(Phase::Halted), Input::Polled { answer, now: &now });
        assert_eq!((state.phase, effects), (Phase::Ready, vec![]));
    }

    // R4–R6: what each verdict means.

    #[test]
    fn allowed_ops_are_dispatched() {
        let wait = Op::Wait { seconds: 3.0 };
        let decision =
            Decision::new(DecisionType::Continue, "go").with_ops([go("kitchen"), wait.clone()]);
        let verdicts = vec![
            verdict(&go("kitchen"), Verdict::Allowed),
            verdict(&wait, Verdict::Allowed),
        ];
        let (state, effects) = judged(ReactState::default(), &decision, verdicts);
        assert_eq!(state, ReactState::default());
        assert_eq!(
            effects,
            [
                Effect::Node(Node::Dispatch),
                Effect::Dispatch {
                    ops: vec![go("kitchen"), wait],
                    decision
                }
            ]
        );
    }

    #[test]
    fn an_op_that_needs_approval_is_held_and_the_rest_go_on() {
        let unlock = Op::Dispatch {
            skill: "lock.unlock".into(),
            args: json!({}),
        };
        let decision =
            Decision::new(DecisionType::Continue, "go").with_ops([unlock.clone(), go("hall")]);
        let held = verdict(&unlock, Verdict::NeedsApproval);
        let verdicts = vec![held.clone(), verdict(&go("hall"), Verdict::Allowed)];
        let (_, effects) = judged(ReactState::default(), &decision, verdicts);
        assert_eq!(
            effects,
            [
                Effect::Node(Node::ApprovalInterrupt),
                Effect::RequestApproval(held),
                Effect::Node(Node::Dispatch),
                Effect::Dispatch {
                    ops: vec![go("hall")],
                    decision
                }
            ]
        );
        // R8: the loop waits for the operator, even with a step under way.
        let outcome = Outcome {
            step_goal: Some("g1".into()),
            approval: Some("a1".into()),
            ..Outcome::default()
        };
        let continuing = Decision::new(DecisionType::Continue, "go");
        let (state, _) = dispatched(ReactState::default(), continuing, outcome);
        assert_eq!(
            state.phase,
            Phase::AwaitingApproval {
                approval_id: "a1".into()
            }
        );
    }

    #[test]
    fn a_refused_op_sends_a_looping_decision_back_to_the_brain() {
        let decision =
            Decision::new(DecisionType::Retry, "again").with_ops([go("hall"), go("moon")]);
        let refused = verdict(&go("moon"), Verdict::Rejected);
        let verdicts = vec![verdict(&go("hall"), Verdict::Allowed), refused.clone()];
        let running = in_phase(Phase::Running {
            goal_id: "g1".into(),
        });
        let (state, effects) = judged(running, &decision, verdicts);
        assert_eq!(effects, [], "nothing dispatched, not even the allowed op");
        assert_eq!(state.phase, Phase::Ready);
        assert_eq!(state.iteration, 0, "the iteration did not end");
        assert_eq!(
            state.last,
            Some(LastResult::GuardrailRejected {
                op: refused.op,
                reason: refused.reason
            })
        );
    }

    #[test]
    fn a_stopping_decision_goes_on_without_its_refused_ops() {
        let speak = Op::Dispatch {
            skill: "speak".into(),
            args: json!({ "text": "done" }),
        };
        let decision =
            Decision::new(DecisionType::Finish, "there").with_ops([go("moon"), speak.clone()]);
        let verdicts = vec![
            verdict(&go("moon"), Verdict::Rejected),
            verdict(&speak, Verdict::Allowed),
        ];
        let (_, effects) = judged(ReactState::default(), &decision, verdicts);
        assert_eq!(
            effects.last(),
            Some(&Effect::Dispatch {
                ops: vec![speak],
                decision
            })
        );
    }

    // R8: each decision type.

    #[test]
    fn finish_abort_and_switch_stop_the_loop_through_the_kernel() {
        for (kind, effect) in [
            (
                DecisionType::Finish,
                Effect::Halt {
                    status: TaskStatus::Succeeded,
                    reason: "why".into(),
                },
            ),
            (
                DecisionType::Abort,
                Effect::Halt {
                    status: TaskStatus::Aborted,
                    reason: "why".into(),
                },
            ),
            (
                DecisionType::SwitchTask,
                Effect::SetAside {
                    reason: "why".into(),
                },
            ),
        ] {
            let (state, effects) = dispatched(
                ReactState::default(),
                Decision::new(kind, "why"),
                Outcome::default(),
            );
            assert_eq!(
                effects,
                [Effect::Node(Node::StopOrLoop), effect],
                "{kind:?}"
            );
            assert_eq!(state.iteration, 1);
            assert_eq!(state.phase, Phase::Ready, "the kernel sets the phase");
        }
    }

    #[test]
    fn ask_human_waits_for_the_operator_and_says_what_to_say() {
        let ask = Decision::new(DecisionType::AskHuman, "no path to the bedroom");
        let (_, effects) = dispatched(ReactState::default(), ask.clone(), Outcome::default());
        assert_eq!(
            effects,
            [
                Effect::Node(Node::StopOrLoop),
                Effect::Halt {
                    status: TaskStatus::WaitingHuman,
                    reason: "no path to the bedroom".into()
                },
                Effect::Speak(
                    "I need help: no path to the bedroom. Say \"retry\" to try again or \"cancel\" to give up."
                        .into()
                ),
            ]
        );
        let alerting = Outcome {
            alerting: true,
            ..Outcome::default()
        };
        let (_, effects) = dispatched(ReactState::default(), ask, alerting);
        assert_eq!(
            effects.last(),
            Some(&Effect::Speak(
                "I will stay here until an operator says \"acknowledge\".".into()
            ))
        );
    }

    #[test]
    fn a_looping_decision_follows_the_goal_that_carries_the_step() {
        for kind in [
            DecisionType::Continue,
            DecisionType::Replan,
            DecisionType::Retry,
        ] {
            let outcome = Outcome {
                step_goal: Some("g2".into()),
                running_step: Some("g1".into()),
                ..Outcome::default()
            };
            let (state, effects) =
                dispatched(ReactState::default(), Decision::new(kind, "go"), outcome);
            assert_eq!(effects, [Effect::Node(Node::StopOrLoop)]);
            assert_eq!(
                state.phase,
                Phase::Running {
                    goal_id: "g2".into()
                }
            );
            assert_eq!((state.iteration, state.next_check), (1, 25.0));
            assert_eq!(
                state.progress.stalled(25.0, 8.0, 0.1),
                None,
                "restarted at 20"
            );
        }
    }

    #[test]
    fn a_looping_decision_that_started_nothing_keeps_or_sets_a_phase() {
        let go_on = || Decision::new(DecisionType::Continue, "go on");
        // A wait op set the phase.
        let waiting = in_phase(Phase::Waiting {
            since: 20.0,
            until: 23.0,
        });
        let (state, _) = dispatched(waiting.clone(), go_on(), Outcome::default());
        assert_eq!(state.phase, waiting.phase);
        // A step started earlier still runs: follow it, without restarting its progress.
        let mut earlier = ReactState::default();
        earlier.progress.restart(2.0);
        let outcome = Outcome {
            running_step: Some("g1".into()),
            ..Outcome::default()
        };
        let (state, _) = dispatched(earlier.clone(), go_on(), outcome);
        assert_eq!(
            state.phase,
            Phase::Running {
                goal_id: "g1".into()
            }
        );
        assert_eq!(state.progress, earlier.progress);
        assert_eq!(state.next_check, 25.0);
        // Nothing runs, nothing to observe: look again after a progress check.
        let (state, _) = dispatched(ReactState::default(), go_on(), Outcome::default());
        assert_eq!(
            state.phase,
            Phase::Waiting {
                since: 20.0,
                until: 25.0
            }
        );
        // A dispatch that failed left a result: the phase stays, to decide on it next tick.
        let mut refused = in_phase(Phase::Ready);
        refused.last = Some(LastResult::Cancelled {
            skill: "watch".into(),
        });
        let (state, _) = dispatched(refused, go_on(), Outcome::default());
        assert_eq!(state.phase, Phase::Ready);
    }

    // R5 answered by the operator.

    #[test]
    fn an_approved_op_runs_once_no_other_approval_is_pending() {
        let approved = |step_goal: Option<&str>, still_waiting| {
            let state = in_phase(Phase::AwaitingApproval {
                approval_id: "a1".into(),
            });
            let input = Input::Approved {
                step_goal: step_goal.map(str::to_string),
                still_waiting,
                now: 20.0,
                limits: &limits(),
            };
            step(state, input).0.phase
        };
        assert!(matches!(
            approved(Some("g1"), true),
            Phase::AwaitingApproval { .. }
        ));
        assert_eq!(
            approved(Some("g1"), false),
            Phase::Running {
                goal_id: "g1".into()
            }
        );
        assert_eq!(approved(None, false), Phase::Ready);
    }

    #[test]
    fn a_refused_approval_is_the_brains_next_observation() {
        let last = LastResult::OperatorRejected {
            op: go("kitchen"),
            reason: "not now".into(),
        };
        let awaiting = in_phase(Phase::AwaitingApproval {
            approval_id: "a1".into(),
        });
        let (state, effects) = step(awaiting, Input::Refused { last: last.clone() });
        assert_eq!(
            (state.phase, state.last, effects),
            (Phase::Ready, Some(last.clone()), vec![])
        );
        // A task set aside meanwhile keeps its phase.
        let (state, _) = step(in_phase(Phase::Halted), Input::Refused { last });
        assert_eq!(state.phase, Phase::Halted);
    }

    /// One whole iteration, input by input, as the engine drives it.
    #[test]
    fn one_iteration_turn_by_turn() {
        let limits = limits();
        let (state, effects) = tick(ReactState::default(), 10.0, false);
        assert_eq!(effects, [Effect::Observe { no_progress: None }]);
        let obs = sample();
        let (state, effects) = step(
            state,
            Input::Observed {
                obs: &obs,
                limits: &limits,
            },
        );
        assert_eq!(effects, [Effect::Think]);
        let decision = Decision::new(DecisionType::Continue, "go").with_ops([go("kitchen")]);
        let answer = Ok((decision, BrainKind::Rule));
        let (state, effects) = step(state, Input::Answered { obs: &obs, answer });
        let Some(Effect::Judge { decision }) = effects.last().cloned() else {
            panic!("{effects:?}");
        };
        let verdicts = vec![verdict(&go("kitchen"), Verdict::Allowed)];
        let (state, effects) = step(state, Input::Judged { decision, verdicts });
        let Some(Effect::Dispatch { ops, decision }) = effects.last().cloned() else {
            panic!("{effects:?}");
        };
        assert_eq!(ops, [go("kitchen")]);
        let outcome = Outcome {
            step_goal: Some("g1".into()),
            ..Outcome::default()
        };
        let (state, effects) = step(
            state,
            Input::Dispatched {
                decision,
                outcome,
                now: 10.0,
                limits: &limits,
            },
        );
        assert_eq!(effects, [Effect::Node(Node::StopOrLoop)]);
        assert_eq!(
            (state.phase, state.iteration, state.next_check),
            (
                Phase::Running {
                    goal_id: "g1".into()
                },
                1,
                15.0
            )
        );
    }
}
