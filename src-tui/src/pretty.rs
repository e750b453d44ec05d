//! The readable event log: one line per event, for a person watching.
//!
//! [`render`] is a pure function of one event and a [`Style`]: the words are
//! [`describe::text`]'s, the time, the kind's column and the colours are
//! this face's. [`Throttle`]
//! decides which of the chatty events (skill feedback, telemetry) are worth a
//! line. Colours are plain ANSI codes, off when `NO_COLOR` is set or stdout
//! is not a terminal.

use std::collections::HashMap;
use std::io::IsTerminal;

use robobrain_core::protocol::describe;
use robobrain_core::protocol::{DecisionType, Event, EventKind, SkillStatus, TaskStatus, Verdict};

/// Seconds between feedback lines of one goal (unless recoveries change).
pub(crate) const FEEDBACK_EVERY_S: f64 = 5.0;
/// Seconds between telemetry lines (unless the zone or charging changes).
pub(crate) const TELEMETRY_EVERY_S: f64 = 10.0;

/// How lines are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Style {
    /// Use ANSI colours.
    pub color: bool,
}

impl Style {
    /// Colours when stdout is a terminal and `NO_COLOR` is unset.
    pub(crate) fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// `text` in the ANSI colour `code` (`"1;35"`), or plain.
    pub(crate) fn paint(self, code: &str, text: &str) -> String {
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
/// node updates, tokens, debug notes, allowed guardrail verdicts): its time,
/// its kind in capitals and [`describe::text`], coloured by what it says.
pub(crate) fn render(event: &Event, style: Style) -> Option<String> {
    let color = color(&event.kind)?;
    let label = event.kind.name().to_uppercase();
    let line = format!(
        "[{:6.1}s] {label:<9} {}",
        event.time,
        describe::text(&event.kind)
    );
    Some(style.paint(color, &line))
}

/// The colour of an event's line, or `None` for events not worth one.
fn color(kind: &EventKind) -> Option<&'static str> {
    Some(match kind {
        // Tokens stream too fast for lines; the console shows them as they come.
        EventKind::Snapshot { .. }
        | EventKind::Update { .. }
        | EventKind::Token { .. }
        | EventKind::Guardrail {
            verdict: Verdict::Allowed,
            ..
        } => return None,
        EventKind::Log { level, .. } => match level.as_str() {
            "debug" => return None,
            "warn" => YELLOW,
            _ => DIM,
        },
        EventKind::Intent { .. } | EventKind::Understanding { .. } | EventKind::Speech { .. } => {
            BLUE
        }
        EventKind::Decision { decision_type, .. } => match decision_type {
            DecisionType::Continue => CYAN,
            DecisionType::Finish => GREEN,
            DecisionType::Abort => BOLD_RED,
            _ => BOLD_YELLOW,
        },
        EventKind::Guardrail {
            verdict: Verdict::NeedsApproval,
            ..
        } => YELLOW,
        EventKind::Guardrail { .. } | EventKind::Alert { .. } => RED,
        EventKind::Mode { .. } | EventKind::Activity { .. } | EventKind::Run { .. } => BOLD_MAGENTA,
        EventKind::Task { task, .. } => match task.status {
            TaskStatus::Succeeded => GREEN,
            TaskStatus::Aborted | TaskStatus::Cancelled => RED,
            TaskStatus::Preempted | TaskStatus::WaitingHuman | TaskStatus::Paused => YELLOW,
            TaskStatus::Queued | TaskStatus::Running => PLAIN,
        },
        EventKind::Skill { status, .. } => match status {
            SkillStatus::Dispatched => PLAIN,
            SkillStatus::Feedback => DIM,
            SkillStatus::Succeeded => GREEN,
            SkillStatus::Failed => RED,
            SkillStatus::Cancelled => YELLOW,
        },
        EventKind::Approval { .. } => BOLD_YELLOW,
        EventKind::Telemetry { .. } | EventKind::Memory { .. } => DIM,
        EventKind::Fault { .. } | EventKind::Error { .. } => BOLD_RED,
        EventKind::Device { .. } => CYAN,
        EventKind::LlmCall(call) => {
            if call.outcome == "ok" {
                DIM
            } else {
                YELLOW
            }
        }
    })
}

/// Decides which chatty events get a line: skill feedback every
/// [`FEEDBACK_EVERY_S`] per goal or when its recoveries change, telemetry
/// every [`TELEMETRY_EVERY_S`] or when the zone or charging changes.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    feedback: HashMap<String, (f64, u32)>,
    telemetry: Option<(f64, Option<String>, bool)>,
}

impl Throttle {
    /// Whether `event` should be printed; remembers what was let through.
    pub(crate) fn admit(&mut self, event: &Event) -> bool {
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

    use robobrain_core::geometry::Pose;
    use robobrain_core::link::{Fault, NavFeedback};
    use robobrain_core::protocol::{LlmCallView, Mode};
    use serde_json::Value;

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
    fn a_mode_line_reads_like_the_issue() {
        let mode = EventKind::Mode {
            from: Mode::Idle,
            to: Mode::Exec,
            reason: "task t1 started".into(),
        };
        assert_eq!(
            plain(12.3, mode).unwrap(),
            "[  12.3s] MODE      IDLE → EXEC: task t1 started"
        );
    }

    #[test]
    fn the_kind_is_a_column_in_capitals() {
        let fault = EventKind::Fault {
            fault: Fault::Block {
                passage: "kitchen_door".into(),
            },
        };
        assert_eq!(
            plain(3.0, fault).unwrap(),
            "[   3.0s] FAULT     block kitchen_door"
        );
        let call = EventKind::LlmCall(Box::new(LlmCallView {
            purpose: "decide".into(),
            model: "qwen".into(),
            outcome: "timeout".into(),
            attempts: 2,
            latency_ms: 900,
            first_token_ms: None,
            prompt_tokens: None,
            completion_tokens: None,
            structured: "tools".into(),
            error: String::new(),
        }));
        assert_eq!(
            render(&ev(1234.5, call), Style { color: true }).unwrap(),
            "\x1b[33m[1234.5s] LLM_CALL  decide qwen: timeout in 900 ms, 2 attempts\x1b[0m"
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
