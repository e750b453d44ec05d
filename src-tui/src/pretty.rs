//! The readable event log: one line per event, for a person watching.
//!
//! [`render`] is a pure function of one event and a [`Style`]; [`Throttle`]
//! decides which of the chatty events (skill feedback, telemetry) are worth a
//! line. Colours are plain ANSI codes, off when `NO_COLOR` is set or stdout
//! is not a terminal.

use robobrain_core::store::ledger::short_goal_id;
use std::collections::HashMap;
use std::io::IsTerminal;

use robobrain_core::protocol::{
    DecisionType, Event, EventKind, LlmCallView, Op, SkillStatus, TaskStatus, Verdict,
};
use robobrain_core::scenario::runner::fault_words;
use serde_json::Value;

/// Seconds between feedback lines of one goal (unless recoveries change).
pub const FEEDBACK_EVERY_S: f64 = 5.0;
/// Seconds between telemetry lines (unless the zone or charging changes).
pub const TELEMETRY_EVERY_S: f64 = 10.0;

/// How lines are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    /// Use ANSI colours.
    pub color: bool,
}

impl Style {
    /// Colours when stdout is a terminal and `NO_COLOR` is unset.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// `text` in the ANSI colour `code` (`"1;35"`), or plain.
    pub fn paint(self, code: &str, text: &str) -> String {
        if self.color && !code.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

const BOLD_MAGENTA: &str = "1;35";
const BOLD_YELLOW: &str = "1;33";
const BOLD_RED: &str = "1;31";
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const BLUE: &str = "34";
const CYAN: &str = "36";
const DIM: &str = "2";
const PLAIN: &str = "";

/// One line for `event`, or `None` for events not worth a line (snapshots,
/// node updates, debug notes, allowed guardrail verdicts).
pub fn render(event: &Event, style: Style) -> Option<String> {
    let (label, color, body) = describe(&event.kind)?;
    let line = format!("[{:6.1}s] {label:<9} {body}", event.time);
    Some(style.paint(color, &line))
}

fn describe(kind: &EventKind) -> Option<(&'static str, &'static str, String)> {
    Some(match kind {
        // Tokens stream too fast for lines; the console shows them as they come.
        EventKind::Snapshot { .. } | EventKind::Update { .. } | EventKind::Token { .. } => {
            return None;
        }
        EventKind::Intent {
            utterance,
            intent,
            args,
            processed_locally,
        } => {
            let via = if *processed_locally { "" } else { " (model)" };
            (
                "INTENT",
                BLUE,
                format!("{utterance:?} → {intent}{}{via}", args_text(args)),
            )
        }
        EventKind::Decision {
            iteration,
            decision_type,
            reason,
            brain,
            ops,
            ..
        } => {
            let color = match decision_type {
                DecisionType::Continue => CYAN,
                DecisionType::Finish => GREEN,
                DecisionType::Abort => BOLD_RED,
                _ => BOLD_YELLOW,
            };
            let ops: Vec<String> = ops.iter().map(op_text).collect();
            let ops = if ops.is_empty() {
                String::new()
            } else {
                format!(" {}", ops.join(", "))
            };
            let brain = serde_json::to_value(brain)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            (
                "DECISION",
                color,
                format!(
                    "#{iteration} {} ({brain}){ops}{}",
                    decision_type.as_str(),
                    dash(reason)
                ),
            )
        }
        EventKind::Guardrail {
            op,
            verdict,
            reason,
            ..
        } => match verdict {
            Verdict::Allowed => return None,
            Verdict::NeedsApproval => (
                "GUARD",
                YELLOW,
                format!("needs approval: {}{}", op_text(op), dash(reason)),
            ),
            Verdict::Rejected => (
                "GUARD",
                RED,
                format!("rejected: {}{}", op_text(op), dash(reason)),
            ),
        },
        EventKind::Mode { from, to, reason } => (
            "MODE",
            BOLD_MAGENTA,
            format!("{} → {}   {reason}", from.as_str(), to.as_str()),
        ),
        EventKind::Activity { from, to, reason } => (
            "ACTIVITY",
            BOLD_MAGENTA,
            format!("{} → {}   {reason}", from.as_str(), to.as_str()),
        ),
        EventKind::Task { task, reason } => {
            let color = match task.status {
                TaskStatus::Succeeded => GREEN,
                TaskStatus::Aborted | TaskStatus::Cancelled => RED,
                TaskStatus::Preempted | TaskStatus::WaitingHuman | TaskStatus::Paused => YELLOW,
                TaskStatus::Queued | TaskStatus::Running => PLAIN,
            };
            let step = if task.steps > 0 {
                format!(", step {}/{}", (task.step + 1).min(task.steps), task.steps)
            } else {
                String::new()
            };
            (
                "TASK",
                color,
                format!(
                    "{} {} — {} ({}, {}{step}){}",
                    task.id,
                    json_word(&task.status),
                    task.title,
                    task.kind,
                    json_word(&task.priority),
                    dash(reason)
                ),
            )
        }
        EventKind::Skill {
            skill,
            status,
            args,
            feedback,
            error,
            message,
            ..
        } => {
            let (color, what) = match status {
                SkillStatus::Dispatched => (PLAIN, format!("dispatched{}", args_text(args))),
                SkillStatus::Feedback => (
                    DIM,
                    feedback.as_ref().map_or_else(
                        || "feedback".to_string(),
                        |f| {
                            let rec = match f.number_of_recoveries {
                                0 => String::new(),
                                1 => ", 1 recovery".into(),
                                n => format!(", {n} recoveries"),
                            };
                            format!(
                                "{:.1} m to go, ~{:.0} s{rec}",
                                f.distance_remaining, f.estimated_time_remaining
                            )
                        },
                    ),
                ),
                SkillStatus::Succeeded => (GREEN, format!("succeeded{}", args_text(args))),
                SkillStatus::Failed => (
                    RED,
                    format!("failed: {}", error.as_deref().unwrap_or("error")),
                ),
                SkillStatus::Cancelled => (YELLOW, "cancelled".into()),
            };
            ("SKILL", color, format!("{skill} {what}{}", dash(message)))
        }
        EventKind::Approval {
            approval_id,
            status,
            op,
            reason,
            ..
        } => (
            "APPROVAL",
            BOLD_YELLOW,
            format!(
                "{approval_id} {}: {}{}",
                json_word(status),
                op_text(op),
                dash(reason)
            ),
        ),
        EventKind::Speech { text, track, .. } => {
            ("SPEECH", BLUE, format!("“{text}” ({})", json_word(track)))
        }
        EventKind::Alert { incident } => ("ALERT", RED, incident.summary()),
        EventKind::Telemetry {
            battery_pct,
            charging,
            zone,
            distance_to_target,
            ..
        } => {
            let mut parts = vec![format!("battery {battery_pct:.1}%")];
            parts.push(zone.clone().unwrap_or_else(|| "between zones".into()));
            if *charging {
                parts.push("charging".into());
            }
            if let Some(d) = distance_to_target {
                parts.push(format!("{d:.1} m to target"));
            }
            ("TELEMETRY", DIM, parts.join(", "))
        }
        EventKind::Fault { fault } => ("FAULT", BOLD_RED, fault_words(fault)),
        EventKind::Device {
            device,
            state,
            online,
            reason,
            ..
        } => (
            "DEVICE",
            CYAN,
            format!(
                "{device} {}{state}{}",
                if *online { "" } else { "(offline) " },
                dash(reason)
            ),
        ),
        EventKind::LlmCall(call) => {
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
            } = call.as_ref();
            let tokens = match (prompt_tokens, completion_tokens) {
                (Some(p), Some(c)) => format!(", {p}+{c} tokens"),
                _ => String::new(),
            };
            let color = if outcome == "ok" { DIM } else { YELLOW };
            let tries = if *attempts > 1 {
                format!(", {attempts} attempts")
            } else {
                String::new()
            };
            (
                "MODEL",
                color,
                format!(
                    "{purpose} {model}: {outcome} in {latency_ms} ms{tries}{tokens}{}",
                    dash(error)
                ),
            )
        }
        EventKind::Memory {
            used,
            tokens,
            budget,
            ..
        } => (
            "MEMORY",
            DIM,
            format!(
                "{} memor{} in the model's input ({tokens}/{budget} tokens){}",
                used.len(),
                if used.len() == 1 { "y" } else { "ies" },
                used.first()
                    .map(|u| format!(": #{} {:.2} — {}", u.id, u.score, u.why))
                    .unwrap_or_default()
            ),
        ),
        EventKind::Log { level, message } => match level.as_str() {
            "debug" => return None,
            "warn" => ("LOG", YELLOW, format!("warn: {message}")),
            _ => ("LOG", DIM, message.clone()),
        },
        EventKind::Error { code, message } => ("ERROR", BOLD_RED, format!("{code}: {message}")),
        EventKind::Run { run } => ("RUN", BOLD_MAGENTA, run.summary()),
    })
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
/// Arguments longer than this many characters are cut (the event log has them whole).
const ARGS_SHOWN: usize = 100;

fn args_text(args: &Value) -> String {
    match args {
        Value::Null => String::new(),
        Value::Object(m) if m.is_empty() => String::new(),
        other => {
            let text = other.to_string();
            match text.char_indices().nth(ARGS_SHOWN) {
                Some((cut, _)) => format!(" {}…", &text[..cut]),
                None => format!(" {text}"),
            }
        }
    }
}

fn op_text(op: &Op) -> String {
    match op {
        Op::Dispatch { skill, args } => format!("dispatch {skill}{}", args_text(args)),
        Op::Cancel { goal_id } => format!("cancel {}", short_goal_id(goal_id)),
        Op::Wait { seconds } => format!("wait {seconds} s"),
    }
}

/// A unit enum's serde name (`waiting_human`, `user_interrupt`).
fn json_word(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Decides which chatty events get a line: skill feedback every
/// [`FEEDBACK_EVERY_S`] per goal or when its recoveries change, telemetry
/// every [`TELEMETRY_EVERY_S`] or when the zone or charging changes.
#[derive(Debug, Default)]
pub struct Throttle {
    feedback: HashMap<String, (f64, u32)>,
    telemetry: Option<(f64, Option<String>, bool)>,
}

impl Throttle {
    /// Whether `event` should be printed; remembers what was let through.
    pub fn admit(&mut self, event: &Event) -> bool {
        match &event.kind {
            EventKind::Skill {
                goal_id,
                status: SkillStatus::Feedback,
                feedback,
                ..
            } => {
                let recoveries = feedback.as_ref().map_or(0, |f| f.number_of_recoveries);
                let due = self.feedback.get(goal_id).is_none_or(|(t, r)| {
                    event.time - t >= FEEDBACK_EVERY_S - 1e-9 || *r != recoveries
                });
                if due {
                    self.feedback
                        .insert(goal_id.clone(), (event.time, recoveries));
                }
                due
            }
            EventKind::Skill { goal_id, .. } => {
                self.feedback.remove(goal_id);
                true
            }
            EventKind::Telemetry { zone, charging, .. } => {
                let due = self.telemetry.as_ref().is_none_or(|(t, z, c)| {
                    event.time - t >= TELEMETRY_EVERY_S - 1e-9 || z != zone || c != charging
                });
                if due {
                    self.telemetry = Some((event.time, zone.clone(), *charging));
                }
                due
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_arguments_are_cut() {
        let long = args_text(&json!({"text": "y".repeat(300)}));
        assert!(long.ends_with('…'), "{long}");
        assert_eq!(long.chars().count(), 1 + ARGS_SHOWN + 1);
        assert_eq!(
            args_text(&json!({"zone": "kitchen"})),
            r#" {"zone":"kitchen"}"#
        );
    }
    use robobrain_core::geometry::Pose;
    use robobrain_core::link::{Fault, NavFeedback};
    use robobrain_core::protocol::{BrainKind, Mode, Priority, TaskView};
    use serde_json::json;

    fn ev(time: f64, kind: EventKind) -> Event {
        Event {
            seq: 1,
            time,
            wall_ms: 0,
            thread_id: "th".into(),
            step: 1,
            origin: None,
            kind,
        }
    }

    fn plain(time: f64, kind: EventKind) -> Option<String> {
        render(&ev(time, kind), Style::default())
    }

    #[test]
    fn mode_and_decision_lines_read_like_the_issue() {
        let mode = EventKind::Mode {
            from: Mode::Idle,
            to: Mode::Exec,
            reason: "task t1 started".into(),
        };
        assert_eq!(
            plain(12.3, mode).unwrap(),
            "[  12.3s] MODE      IDLE → EXEC   task t1 started"
        );
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
            plain(12.3, decision).unwrap(),
            r#"[  12.3s] DECISION  #1 CONTINUE (rule) dispatch navigate_to {"zone":"kitchen"} — start step 1/1"#
        );
    }

    #[test]
    fn tasks_skills_faults_and_telemetry_are_compact() {
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
            plain(1.0, task).unwrap(),
            "[   1.0s] TASK      t2 waiting_human — go to kitchen (goto, user_interrupt, step 1/1) — iteration cap"
        );
        let failed = EventKind::Skill {
            goal_id: "g1".into(),
            skill: "navigate_to".into(),
            status: SkillStatus::Failed,
            args: json!({"zone": "kitchen"}),
            feedback: None,
            error: Some("blocked".into()),
            message: "kitchen_door is blocked".into(),
            output: None,
        };
        assert_eq!(
            plain(3.0, failed).unwrap(),
            "[   3.0s] SKILL     navigate_to failed: blocked — kitchen_door is blocked"
        );
        let fault = EventKind::Fault {
            fault: Fault::Block {
                passage: "kitchen_door".into(),
            },
        };
        assert_eq!(
            plain(3.0, fault).unwrap(),
            "[   3.0s] FAULT     block kitchen_door"
        );
        let tel = EventKind::Telemetry {
            pose: Pose::default(),
            battery_pct: 19.94,
            charging: true,
            zone: Some("charger".into()),
            distance_to_target: None,
            busy: vec![],
        };
        assert_eq!(
            plain(10.0, tel).unwrap(),
            "[  10.0s] TELEMETRY battery 19.9%, charger, charging"
        );
    }

    #[test]
    fn quiet_events_get_no_line_and_colour_wraps_the_line() {
        let debug = EventKind::Log {
            level: "debug".into(),
            message: "x".into(),
        };
        assert_eq!(plain(0.0, debug), None);
        let err = EventKind::Error {
            code: "invalid_command".into(),
            message: "bad".into(),
        };
        let line = render(&ev(0.0, err), Style { color: true }).unwrap();
        assert_eq!(
            line,
            "\x1b[1;31m[   0.0s] ERROR     invalid_command: bad\x1b[0m"
        );
    }

    #[test]
    fn throttle_thins_feedback_and_telemetry() {
        let fb = |t: f64, rec: u32| {
            ev(
                t,
                EventKind::Skill {
                    goal_id: "g1".into(),
                    skill: "navigate_to".into(),
                    status: SkillStatus::Feedback,
                    args: Value::Null,
                    feedback: Some(NavFeedback {
                        number_of_recoveries: rec,
                        ..NavFeedback::default()
                    }),
                    error: None,
                    message: String::new(),
                    output: None,
                },
            )
        };
        let mut th = Throttle::default();
        let admitted: Vec<bool> = [fb(0.0, 0), fb(1.0, 0), fb(2.0, 1), fb(3.0, 1), fb(7.0, 1)]
            .iter()
            .map(|e| th.admit(e))
            .collect();
        assert_eq!(admitted, vec![true, false, true, false, true]);
        let tel = |t: f64, zone: &str| {
            ev(
                t,
                EventKind::Telemetry {
                    pose: Pose::default(),
                    battery_pct: 50.0,
                    charging: false,
                    zone: Some(zone.into()),
                    distance_to_target: None,
                    busy: vec![],
                },
            )
        };
        let admitted: Vec<bool> = [tel(0.0, "a"), tel(5.0, "a"), tel(6.0, "b"), tel(16.0, "b")]
            .iter()
            .map(|e| th.admit(e))
            .collect();
        assert_eq!(admitted, vec![true, false, true, true]);
    }
}
