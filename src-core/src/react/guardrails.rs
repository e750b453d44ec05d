//! Guardrails and the resource check (seed 003 R4): hard checks on every op
//! a decision asks for. What the brain says never grants a permission.

use crate::config::PolicyConfig;
use crate::policy;
use crate::protocol::{Mode, Op, Verdict};
use crate::skills::{SkillRegistry, SkillRunner};
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
            if !approved
                && let Some(reason) =
                    policy::approval_reason(ctx.policy, spec, args, ctx.world, ctx.home)
            {
                return judged(Verdict::NeedsApproval, reason);
            }
            judged(
                Verdict::Allowed,
                format!("{skill} passes schema, resources and policy"),
            )
        }
    }
}
