//! Guardrails and the resource check (seed 003 R4): hard checks on every op
//! a decision asks for. What the brain says never grants a permission.

use crate::config::PolicyConfig;
use crate::policy;
use crate::protocol::{Mode, Op, Verdict};
use crate::skills::{Motion, SkillRegistry, SkillRunner};
use crate::world::World;

/// Longest wait a decision may ask for, sim seconds.
pub const MAX_WAIT_S: f64 = 600.0;

/// What the guardrails look at.
pub struct GuardContext<'a> {
    /// Skills and their schemas.
    pub registry: &'a SkillRegistry,
    /// Zones.
    pub world: &'a World,
    /// Approval rules.
    pub policy: &'a PolicyConfig,
    /// The kernel's mode.
    pub mode: Mode,
    /// Running goals (resource holders).
    pub runner: &'a SkillRunner,
    /// The task the ops are for.
    pub task_id: &'a str,
    /// The home's devices and rules, for device tools.
    pub home: Option<&'a crate::policy::HomeGate<'a>>,
    /// Where the robot is: a motion is judged from here.
    pub start: policy::motion::Start<'a>,
    /// Set when the task was only asked for (a Home Assistant press) and
    /// no operator has approved a step of it yet: every motion waits for
    /// an approval ([`crate::kernel::Task::only_asked`]).
    pub only_asked: Option<&'a crate::protocol::Origin>,
}

/// The verdict on one op.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The op.
    pub op: Op,
    /// Allowed, needs approval, or rejected.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
}

/// Judges every op of a decision. `approved` ops (already approved by an
/// operator) skip the approval policy but nothing else.
pub fn judge(ops: &[Op], ctx: &GuardContext<'_>, approved: bool) -> Vec<Judged> {
    ops.iter()
        .map(|op| judge_one(op, ops, ctx, approved))
        .collect()
}

fn judge_one(op: &Op, all: &[Op], ctx: &GuardContext<'_>, approved: bool) -> Judged {
    let judged = |verdict, reason: String| Judged {
        op: op.clone(),
        verdict,
        reason,
    };
    match op {
        Op::Wait { seconds } => {
            if seconds.is_finite() && (0.0..=MAX_WAIT_S).contains(seconds) {
                judged(Verdict::Allowed, format!("wait {seconds:.1} s"))
            } else {
                judged(
                    Verdict::Rejected,
                    format!("wait must be 0–{MAX_WAIT_S:.0} s, got {seconds}"),
                )
            }
        }
        Op::Cancel { goal_id } => match ctx.runner.running().iter().find(|g| &g.goal_id == goal_id)
        {
            Some(g) if g.task_id.as_deref() == Some(ctx.task_id) => judged(
                Verdict::Allowed,
                format!("cancel {} ({})", goal_id, g.skill),
            ),
            Some(g) => judged(
                Verdict::Rejected,
                format!(
                    "goal {goal_id} belongs to {}, not {}",
                    g.task_id.as_deref().unwrap_or("no task"),
                    ctx.task_id
                ),
            ),
            None => judged(Verdict::Rejected, format!("no running goal {goal_id}")),
        },
        Op::Dispatch { skill, args } => {
            let spec = match ctx.registry.check(skill, args, ctx.world) {
                Ok(spec) => spec,
                Err(e) => return judged(Verdict::Rejected, e.to_string()),
            };
            if ctx.mode == Mode::Safe && skill != "stop_base" {
                return judged(
                    Verdict::Rejected,
                    "SAFE mode: only stop_base may run".into(),
                );
            }
            for resource in &spec.resources {
                if let Some(holder) = ctx.runner.holder_of(resource) {
                    let freed = all
                        .iter()
                        .any(|o| matches!(o, Op::Cancel { goal_id } if *goal_id == holder.goal_id));
                    if !freed {
                        return judged(
                            Verdict::Rejected,
                            format!(
                                "{resource} is held by {} ({}) and not cancelled",
                                holder.goal_id, holder.skill
                            ),
                        );
                    }
                }
            }
            if !approved {
                // Where the goal sends the base, whatever door or form it came in.
                let motion = ctx
                    .registry
                    .motion(skill, args, ctx.world)
                    .unwrap_or(Motion::Unknown);
                if let Some(origin) = ctx.only_asked
                    && motion != Motion::Still
                {
                    return judged(
                        Verdict::NeedsApproval,
                        format!(
                            "asked for from {origin}: a press there only asks, and the robot \
                             moves when an operator approves"
                        ),
                    );
                }
                if let Some(reason) = policy::approval_reason(
                    ctx.policy, spec, args, &motion, ctx.world, &ctx.start, ctx.home,
                ) {
                    return judged(Verdict::NeedsApproval, reason);
                }
            }
            judged(
                Verdict::Allowed,
                format!("{skill} passes schema, resources and policy"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A runner with `navigate_to` running as goal `g1` for task `t1`, holding the base.
    fn runner() -> SkillRunner {
        serde_json::from_value(json!({"running": [{
            "goal_id": "g1", "skill": "navigate_to", "args": {"zone": "kitchen"},
            "task_id": "t1", "started_at": 0.0, "deadline": 60.0,
            "resources": ["base"], "feedback": null
        }]}))
        .unwrap()
    }

    fn go(zone: &str) -> Op {
        Op::Dispatch {
            skill: "navigate_to".into(),
            args: json!({"zone": zone}),
        }
    }

    fn cancel(goal: &str) -> Op {
        Op::Cancel {
            goal_id: goal.into(),
        }
    }

    /// Judges `ops` for task `task` in `mode` with `runner`: (verdict, reason) each.
    fn verdicts(
        ops: &[Op],
        task: &str,
        mode: Mode,
        runner: &SkillRunner,
        approved: bool,
    ) -> Vec<(Verdict, String)> {
        let registry = SkillRegistry::with_builtins().unwrap();
        let world = World::builtin("apartment").unwrap();
        let policy = PolicyConfig::default();
        let ctx = GuardContext {
            registry: &registry,
            world: &world,
            policy: &policy,
            mode,
            runner,
            task_id: task,
            home: None,
            start: policy::motion::Start {
                at: Some(world.start_pose.point()),
                blocked: &[],
                open: None,
            },
            only_asked: None,
        };
        judge(ops, &ctx, approved)
            .into_iter()
            .zip(ops)
            .map(|(j, op)| {
                // Compared as text: a NaN wait is its own op, though NaN != NaN.
                assert_eq!(format!("{:?}", j.op), format!("{op:?}"));
                (j.verdict, j.reason)
            })
            .collect()
    }

    fn one(op: Op, mode: Mode, runner: &SkillRunner) -> (Verdict, String) {
        verdicts(&[op], "t1", mode, runner, false).remove(0)
    }

    #[test]
    fn waits_are_bounded() {
        let idle = SkillRunner::new();
        let wait = |seconds| Op::Wait { seconds };
        assert_eq!(
            one(wait(0.0), Mode::Exec, &idle),
            (Verdict::Allowed, "wait 0.0 s".into())
        );
        assert_eq!(one(wait(MAX_WAIT_S), Mode::Exec, &idle).0, Verdict::Allowed);
        for bad in [-1.0, MAX_WAIT_S + 0.5, f64::NAN, f64::INFINITY] {
            let (verdict, why) = one(wait(bad), Mode::Exec, &idle);
            assert_eq!(verdict, Verdict::Rejected, "{bad}");
            assert_eq!(why, format!("wait must be 0–600 s, got {bad}"));
        }
    }

    #[test]
    fn a_task_may_cancel_only_its_own_running_goals() {
        let running = runner();
        assert_eq!(
            one(cancel("g1"), Mode::Exec, &running),
            (Verdict::Allowed, "cancel g1 (navigate_to)".into())
        );
        assert_eq!(
            verdicts(&[cancel("g1")], "t2", Mode::Exec, &running, false)[0],
            (Verdict::Rejected, "goal g1 belongs to t1, not t2".into())
        );
        assert_eq!(
            one(cancel("g9"), Mode::Exec, &running),
            (Verdict::Rejected, "no running goal g9".into())
        );
        let mut v = serde_json::to_value(runner()).unwrap();
        v["running"][0]["task_id"] = json!(null);
        let orphan: SkillRunner = serde_json::from_value(v).unwrap();
        assert_eq!(
            one(cancel("g1"), Mode::Exec, &orphan),
            (
                Verdict::Rejected,
                "goal g1 belongs to no task, not t1".into()
            )
        );
    }

    #[test]
    fn dispatch_checks_schema_mode_resources_and_policy() {
        let idle = SkillRunner::new();
        assert_eq!(
            one(go("kitchen"), Mode::Exec, &idle),
            (
                Verdict::Allowed,
                "navigate_to passes schema, resources and policy".into()
            )
        );
        let (verdict, why) = one(go("atlantis"), Mode::Exec, &idle);
        assert_eq!(verdict, Verdict::Rejected);
        assert!(why.contains("atlantis"), "{why}");
        let unknown = Op::Dispatch {
            skill: "fly".into(),
            args: json!({}),
        };
        assert_eq!(one(unknown, Mode::Exec, &idle).0, Verdict::Rejected);
        // SAFE mode: only stopping the base may run.
        assert_eq!(
            one(go("kitchen"), Mode::Safe, &idle),
            (
                Verdict::Rejected,
                "SAFE mode: only stop_base may run".into()
            )
        );
        let stop = Op::Dispatch {
            skill: "stop_base".into(),
            args: json!({}),
        };
        assert_eq!(one(stop, Mode::Safe, &idle).0, Verdict::Allowed);
        // The base is held by g1 unless the same decision cancels it.
        let running = runner();
        assert_eq!(
            one(go("bedroom"), Mode::Exec, &running),
            (
                Verdict::Rejected,
                "base is held by g1 (navigate_to) and not cancelled".into()
            )
        );
        let both = verdicts(
            &[cancel("g1"), go("bedroom")],
            "t1",
            Mode::Exec,
            &running,
            false,
        );
        assert_eq!(both[0].0, Verdict::Allowed);
        assert_eq!(both[1].0, Verdict::Allowed);
        let other = verdicts(
            &[cancel("g9"), go("bedroom")],
            "t1",
            Mode::Exec,
            &running,
            false,
        );
        assert_eq!(other[1].0, Verdict::Rejected);
        // The policy asks for approval unless an operator already gave it.
        let (verdict, why) = one(go("study"), Mode::Exec, &idle);
        assert_eq!(verdict, Verdict::NeedsApproval);
        assert_eq!(why, "navigate_to enters the restricted zone study");
        assert_eq!(
            verdicts(&[go("study")], "t1", Mode::Exec, &idle, true)[0].0,
            Verdict::Allowed
        );
        // By coordinates and by the dock, judged by where they go.
        let at = |x: f64, y: f64| Op::Dispatch {
            skill: "navigate_to".into(),
            args: json!({"x": x, "y": y}),
        };
        assert_eq!(
            one(at(3.0, 2.0), Mode::Exec, &idle),
            (
                Verdict::NeedsApproval,
                "navigate_to enters the restricted zone study".into()
            )
        );
        assert_eq!(
            one(at(15.0, 8.0), Mode::Exec, &idle),
            (
                Verdict::NeedsApproval,
                "navigate_to leaves the apartment (outside)".into()
            )
        );
        assert_eq!(one(at(8.25, 2.0), Mode::Exec, &idle).0, Verdict::Allowed);
        let dock = Op::Dispatch {
            skill: "dock".into(),
            args: json!({}),
        };
        assert_eq!(one(dock, Mode::Exec, &idle).0, Verdict::Allowed);
        // Approval does not lift the other checks.
        assert_eq!(
            verdicts(&[go("study")], "t1", Mode::Safe, &idle, true)[0].0,
            Verdict::Rejected
        );
    }
}
