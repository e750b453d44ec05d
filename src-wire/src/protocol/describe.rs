//! An event in words, for a person: the one wording every Rust face uses
//! (the headless log, the console's event list, the Foxglove log, the
//! report), so an event reads the same wherever it is shown. A face adds
//! its own decoration — a time stamp, colours, a column for the kind, the
//! door a command came from — and decides which events are worth a line.
//! The page (TypeScript, `ui/src/state.ts`) words events itself.
//!
//! Pure: a value in, a `String` out.

use serde::Serialize;
use serde_json::Value;

use super::{
    EventKind, Fault, IncidentRecord, LlmCallView, MemoryUse, NavFeedback, Op, SkillStatus,
    TaskView,
};

/// Arguments longer than this many characters are cut (the event log has
/// them whole).
const ARGS_SHOWN: usize = 100;

/// One event on one line: its kind, then [`text`]
/// (`mode IDLE → EXEC: task t1 started`).
pub fn line(kind: &EventKind) -> String {
    format!("{} {}", kind.name(), text(kind))
}

/// What an event says, without its kind: `IDLE → EXEC: task t1 started`,
/// `navigate_to kitchen [g1.0] failed: blocked — kitchen_door is blocked`.
pub fn text(kind: &EventKind) -> String {
    match kind {
        EventKind::Snapshot { snapshot } => {
            format!("{} at step {}", snapshot.thread_id, snapshot.step)
        }
        EventKind::Update { node, changed } => format!("{} {changed}", word(node)),
        EventKind::Token { purpose, text } => format!("{purpose}: {text}"),
        EventKind::Run { run } => run.summary(),
        EventKind::Mode { from, to, reason } => transition(from.as_str(), to.as_str(), reason),
        EventKind::Activity { from, to, reason } => transition(from.as_str(), to.as_str(), reason),
        EventKind::Task { task, reason } => task_text(task, reason),
        EventKind::Speech { text, track, .. } => format!("“{text}” ({})", word(track)),
        EventKind::Alert { incident } => alert_text(incident),
        EventKind::Fault { fault: f } => fault(f),
        EventKind::LlmCall(call) => llm_call(call),
        EventKind::Log { level, message } => match level.as_str() {
            "warn" | "debug" => format!("{level}: {message}"),
            _ => message.clone(),
        },
        EventKind::Error { code, message } => format!("{code}: {message}"),
        EventKind::Understanding { utterance, trace } => format!("{utterance:?}: {}", trace.text()),
        EventKind::Intent { .. }
        | EventKind::Decision { .. }
        | EventKind::Guardrail { .. }
        | EventKind::Approval { .. }
        | EventKind::Memory { .. } => brain_text(kind),
        EventKind::Skill { .. } | EventKind::Telemetry { .. } | EventKind::Device { .. } => {
            robot_text(kind)
        }
    }
}

/// What the brain and its guards made of an event: an intent, a decision,
/// a guardrail verdict, an approval, or the memory it was given. Only
/// [`text`] calls this, with those events; any other reads as nothing.
fn brain_text(kind: &EventKind) -> String {
    match kind {
        EventKind::Intent {
            utterance,
            intent,
            args,
            processed_locally,
        } => {
            let via = if *processed_locally { "" } else { " (model)" };
            format!("{utterance:?} → {intent}{}{via}", args_text(args))
        }
        EventKind::Decision {
            task_id,
            iteration,
            decision_type,
            reason,
            brain,
            ops,
        } => format!(
            "{task_id} #{iteration} {} ({}){}{}",
            decision_type.as_str(),
            word(brain),
            ops_text(ops),
            dash(reason)
        ),
        EventKind::Guardrail {
            op: o,
            verdict,
            reason,
            ..
        } => format!(
            "{}: {}{}",
            word(verdict).replace('_', " "),
            op(o),
            dash(reason)
        ),
        EventKind::Approval {
            approval_id,
            status,
            op: o,
            reason,
            ..
        } => format!("{approval_id} {}: {}{}", word(status), op(o), dash(reason)),
        EventKind::Memory {
            used,
            tokens,
            budget,
            ..
        } => memory_text(used, *tokens, *budget),
        _ => String::new(),
    }
}

/// What the robot did or reports: a skill goal, its telemetry, a device.
/// Only [`text`] calls this, with those events; any other reads as nothing.
fn robot_text(kind: &EventKind) -> String {
    match kind {
        EventKind::Skill {
            goal_id,
            skill,
            status,
            args,
            feedback,
            error,
            message,
            ..
        } => format!(
            "{skill}{} [{}] {}{}",
            spaced(&target(args)),
            short_goal_id(goal_id),
            skill_progress(*status, feedback.as_ref(), error.as_deref()),
            dash(message)
        ),
        EventKind::Telemetry {
            battery_pct,
            charging,
            zone,
            distance_to_target,
            ..
        } => telemetry_text(
            *battery_pct,
            *charging,
            zone.as_deref(),
            *distance_to_target,
        ),
        EventKind::Device {
            device,
            state,
            online,
            reason,
            ..
        } => format!(
            "{device} {}{state}{}",
            if *online { "" } else { "(offline) " },
            dash(reason)
        ),
        _ => String::new(),
    }
}

/// A change of mode or activity: `IDLE → EXEC: task t1 started`.
fn transition(from: &str, to: &str, reason: &str) -> String {
    format!("{from} → {to}: {reason}")
}

/// A decision's ops as ` navigate_to kitchen, wait 3 s`, or nothing for no ops.
fn ops_text(ops: &[Op]) -> String {
    let ops: Vec<String> = ops.iter().map(op).collect();
    if ops.is_empty() {
        String::new()
    } else {
        format!(" {}", ops.join(", "))
    }
}

/// A task as it stands:
/// `t2 waiting_human: go to kitchen (goto, user_interrupt, step 1/1) — iteration cap`.
fn task_text(task: &TaskView, reason: &str) -> String {
    let step = if task.steps > 0 {
        format!(", step {}/{}", (task.step + 1).min(task.steps), task.steps)
    } else {
        String::new()
    };
    format!(
        "{} {}: {} ({}, {}{step}){}",
        task.id,
        word(&task.status),
        task.title,
        task.kind,
        word(&task.priority),
        dash(reason)
    )
}

/// Where a skill goal stands: its progress with `feedback`, its error with
/// `failed`, else the status word.
fn skill_progress(
    status: SkillStatus,
    feedback: Option<&NavFeedback>,
    error: Option<&str>,
) -> String {
    match status {
        SkillStatus::Feedback => feedback.map_or_else(|| "feedback".to_string(), feedback_text),
        SkillStatus::Failed => format!("failed: {}", error.unwrap_or("error")),
        other => word(&other),
    }
}

/// Navigation progress: `4.0 m to go, ~8 s, 2 recoveries`.
fn feedback_text(f: &NavFeedback) -> String {
    let rec = match f.number_of_recoveries {
        0 => String::new(),
        1 => ", 1 recovery".into(),
        n => format!(", {n} recoveries"),
    };
    format!(
        "{:.1} m to go, ~{:.0} s{rec}",
        f.distance_remaining, f.estimated_time_remaining
    )
}

/// An alert: raised (with its evidence, when there is some) or acknowledged.
fn alert_text(incident: &IncidentRecord) -> String {
    let what = format!("{} in {}", incident.kinds.join(" and "), incident.zone);
    match (&incident.acknowledged_by, &incident.evidence) {
        (Some(by), _) => format!("{} ({what}) acknowledged by {by}", incident.id),
        (None, Some(path)) => format!("{}: {what} — evidence {path}", incident.id),
        (None, None) => format!("{}: {what}", incident.id),
    }
}

/// The robot's state: `battery 19.9%, charger, charging, 2.0 m to target`.
fn telemetry_text(
    battery_pct: f64,
    charging: bool,
    zone: Option<&str>,
    distance_to_target: Option<f64>,
) -> String {
    let mut parts = vec![format!("battery {battery_pct:.1}%")];
    parts.push(zone.map_or_else(|| "between zones".into(), str::to_string));
    if charging {
        parts.push("charging".into());
    }
    if let Some(d) = distance_to_target {
        parts.push(format!("{d:.1} m to target"));
    }
    parts.join(", ")
}

/// Memory put into a model's input, with the best memory and why it was chosen.
fn memory_text(used: &[MemoryUse], tokens: usize, budget: usize) -> String {
    format!(
        "{} memor{} in the model's input ({tokens}/{budget} tokens){}",
        used.len(),
        if used.len() == 1 { "y" } else { "ies" },
        used.first()
            .map(|u| format!(": #{} {:.2} — {}", u.id, u.score, u.why))
            .unwrap_or_default()
    )
}

/// ` text`, or nothing for empty text.
fn spaced(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(" {text}")
    }
}

/// `decide qwen-max: ok in 420 ms, 2 attempts, 812+64 tokens`.
fn llm_call(call: &LlmCallView) -> String {
    let LlmCallView {
        purpose,
        model,
        outcome,
        attempts,
        latency_ms,
        prompt_tokens,
        completion_tokens,
        error,
        ..
    } = call;
    let tokens = match (prompt_tokens, completion_tokens) {
        (Some(p), Some(c)) => format!(", {p}+{c} tokens"),
        _ => String::new(),
    };
    let tries = if *attempts > 1 {
        format!(", {attempts} attempts")
    } else {
        String::new()
    };
    format!(
        "{purpose} {model}: {outcome} in {latency_ms} ms{tries}{tokens}{}",
        dash(error)
    )
}

/// An op in words: `navigate_to kitchen`, `say text=hello`, `cancel g3.0`,
/// `wait 3 s`.
pub fn op(op: &Op) -> String {
    match op {
        Op::Dispatch { skill, args } => {
            let t = target(args);
            if t.is_empty() {
                skill.clone()
            } else {
                format!("{skill} {t}")
            }
        }
        Op::Cancel { goal_id } => format!("cancel {}", short_goal_id(goal_id)),
        Op::Wait { seconds } => format!("wait {seconds:.0} s"),
    }
}

/// Where a skill goes, in words: the zone (`kitchen`), else its arguments
/// as `key=value` pairs, cut after a hundred characters; empty for none.
pub fn target(args: &Value) -> String {
    let words = args.get("zone").and_then(Value::as_str).map_or_else(
        || match args {
            Value::Null => String::new(),
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        },
        str::to_string,
    );
    cut(words)
}

/// A fault in a few words: `block kitchen_door`, `set_battery 15`, `stall`.
pub fn fault(fault: &Fault) -> String {
    let mut words = Vec::new();
    if let Ok(Value::Object(mut m)) = serde_json::to_value(fault) {
        if let Some(Value::String(name)) = m.remove("fault") {
            words.push(name);
        }
        words.extend(
            m.values()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)),
        );
    }
    words.join(" ")
}

/// A unit enum as it is spelt on the wire (`waiting_human`, `user_interrupt`).
pub fn word(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A goal id without its thread (`g12.0` for `patrol-1/g12.0`): what faces
/// show, the thread being theirs already.
///
/// ```
/// use robobrain_wire::protocol::describe::short_goal_id;
/// assert_eq!(short_goal_id("patrol-1/g12.0"), "g12.0");
/// assert_eq!(short_goal_id("g3.1"), "g3.1");
/// ```
pub fn short_goal_id(goal_id: &str) -> &str {
    goal_id.rsplit_once('/').map_or(goal_id, |(_, local)| local)
}

/// ` — reason`, or nothing for an empty reason.
fn dash(reason: &str) -> String {
    if reason.trim().is_empty() {
        String::new()
    } else {
        format!(" — {reason}")
    }
}

/// ` {"zone":"kitchen"}`, or nothing for null or `{}`.
fn args_text(args: &Value) -> String {
    match args {
        Value::Null => String::new(),
        Value::Object(m) if m.is_empty() => String::new(),
        other => format!(" {}", cut(other.to_string())),
    }
}

/// `text`, cut after [`ARGS_SHOWN`] characters with an ellipsis.
fn cut(text: String) -> String {
    match text.char_indices().nth(ARGS_SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Pose;
    use crate::protocol::{
        ApprovalStatus, BrainKind, DecisionType, Mode, NavFeedback, Priority, TaskStatus, TaskView,
        Verdict,
    };
    use serde_json::json;

    #[test]
    fn modes_decisions_and_guardrails_read_as_one_line() {
        let mode = EventKind::Mode {
            from: Mode::Idle,
            to: Mode::Exec,
            reason: "task t1 started".into(),
        };
        assert_eq!(line(&mode), "mode IDLE → EXEC: task t1 started");
        let decision = EventKind::Decision {
            task_id: "t1".into(),
            iteration: 1,
            decision_type: DecisionType::Continue,
            reason: "start step 1/1".into(),
            brain: BrainKind::Rule,
            ops: vec![Op::Dispatch {
                skill: "navigate_to".into(),
                args: json!({"zone": "kitchen"}),
            }],
        };
        assert_eq!(
            text(&decision),
            "t1 #1 CONTINUE (rule) navigate_to kitchen — start step 1/1"
        );
        let guard = EventKind::Guardrail {
            task_id: "t1".into(),
            op: Op::Cancel {
                goal_id: "th/g3.0".into(),
            },
            verdict: Verdict::NeedsApproval,
            reason: String::new(),
        };
        assert_eq!(text(&guard), "needs approval: cancel g3.0");
    }

    #[test]
    fn tasks_skills_and_approvals_name_what_they_are_about() {
        let task = EventKind::Task {
            task: TaskView {
                id: "t2".into(),
                title: "go to kitchen".into(),
                kind: "goto".into(),
                priority: Priority::UserInterrupt,
                status: TaskStatus::WaitingHuman,
                step: 0,
                steps: 1,
                deadline: None,
            },
            reason: "iteration cap".into(),
        };
        assert_eq!(
            text(&task),
            "t2 waiting_human: go to kitchen (goto, user_interrupt, step 1/1) — iteration cap"
        );
        let skill = |status, feedback, error: Option<&str>, message: &str| EventKind::Skill {
            goal_id: "th/g4.0".into(),
            skill: "navigate_to".into(),
            status,
            args: json!({"zone": "kitchen"}),
            feedback,
            error: error.map(str::to_string),
            message: message.into(),
            output: None,
        };
        assert_eq!(
            line(&skill(
                SkillStatus::Failed,
                None,
                Some("blocked"),
                "kitchen_door is blocked"
            )),
            "skill navigate_to kitchen [g4.0] failed: blocked — kitchen_door is blocked"
        );
        let going = NavFeedback {
            distance_remaining: 4.04,
            estimated_time_remaining: 7.6,
            number_of_recoveries: 2,
            ..NavFeedback::default()
        };
        assert_eq!(
            text(&skill(SkillStatus::Feedback, Some(going), None, "")),
            "navigate_to kitchen [g4.0] 4.0 m to go, ~8 s, 2 recoveries"
        );
        let approval = EventKind::Approval {
            approval_id: "a1".into(),
            task_id: "t1".into(),
            status: ApprovalStatus::Requested,
            op: Op::Dispatch {
                skill: "say".into(),
                args: json!({"text": "hello", "volume": 3}),
            },
            reason: "speaks aloud".into(),
            requested_by: None,
        };
        assert_eq!(
            text(&approval),
            "a1 requested: say text=hello volume=3 — speaks aloud"
        );
    }

    #[test]
    fn telemetry_faults_and_logs_are_compact() {
        let tel = EventKind::Telemetry {
            pose: Pose::default(),
            battery_pct: 19.94,
            charging: true,
            zone: Some("charger".into()),
            distance_to_target: None,
            busy: vec![],
        };
        assert_eq!(text(&tel), "battery 19.9%, charger, charging");
        let fault = EventKind::Fault {
            fault: Fault::Block {
                passage: "kitchen_door".into(),
            },
        };
        assert_eq!(line(&fault), "fault block kitchen_door");
        let warn = EventKind::Log {
            level: "warn".into(),
            message: "走廊有点暗".into(),
        };
        assert_eq!(text(&warn), "warn: 走廊有点暗");
        let info = EventKind::Log {
            level: "info".into(),
            message: "ok".into(),
        };
        assert_eq!(text(&info), "ok");
    }

    #[test]
    fn long_arguments_are_cut() {
        let long = target(&json!({"text": "y".repeat(300)}));
        assert!(long.ends_with('…'), "{long}");
        assert_eq!(long.chars().count(), ARGS_SHOWN + 1);
        let long = args_text(&json!({"text": "y".repeat(300)}));
        assert_eq!(long.chars().count(), 1 + ARGS_SHOWN + 1);
        assert_eq!(
            args_text(&json!({"zone": "kitchen"})),
            r#" {"zone":"kitchen"}"#
        );
        assert_eq!(args_text(&json!({})), "");
    }
}
