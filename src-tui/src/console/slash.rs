//! What the input line means: an utterance, or a `/command`. Pure: text in,
//! [`Input`] out, with a specific error for a command it cannot read.

use robobrain_core::link::Fault;
use robobrain_core::protocol::Command;
use thiserror::Error;

/// What a submitted line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Send this to the core.
    Send(Command),
    /// Answer a pending approval (`/approve`, `/reject`, `/edit ID JSON`):
    /// sent once the console has checked the id is waiting.
    Answer(Command),
    /// `/edit ID` without arguments: open that approval's JSON editor.
    EditArgs {
        /// The approval.
        approval_id: String,
    },
    /// Show the key bindings.
    Help,
    /// Leave the console (asks first when a task is running).
    Quit,
    /// Nothing (a blank line).
    Nothing,
}

/// Why a `/command` was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SlashError {
    /// Not a command the console knows.
    #[error("unknown command `/{0}`; type /help for the list")]
    Unknown(String),
    /// A command with the wrong arguments.
    #[error("usage: {0}")]
    Usage(&'static str),
    /// `/edit` arguments that are not JSON.
    #[error("/edit: the arguments are not valid JSON: {0}")]
    Json(String),
    /// A number that is not one.
    #[error("`{value}` is not a {what}")]
    Number {
        /// What was given.
        value: String,
        /// What was expected.
        what: &'static str,
    },
}

/// The `/commands`, for the help screen: (usage, what it does).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/estop", "emergency stop (also F12 or Ctrl-X)"),
    ("/pause", "pause the active task"),
    (
        "/reset",
        "reset a latched E-stop (nothing restarts; /resume after)",
    ),
    (
        "/resume",
        "start paused tasks, retry a stuck task (not while E-stopped)",
    ),
    ("/stop", "cancel the active task"),
    ("/patrol [ROUTE]", "patrol a route of the world"),
    ("/approve ID", "approve a pending approval as proposed"),
    ("/reject ID [WHY]", "reject a pending approval"),
    (
        "/edit ID [JSON]",
        "approve with these args (no JSON: edit on the card)",
    ),
    (
        "/ack [ID]",
        "acknowledge an alert (all open ones without an id)",
    ),
    ("/inject FAULT", "simulator fault, see below"),
    ("/help", "this screen"),
    ("/quit", "leave (asks while a task runs)"),
];

/// The faults `/inject` understands, for the help screen.
pub const FAULTS: &str = "block PASSAGE · unblock PASSAGE · battery PCT · stall · unstall · incident ZONE KIND · clear ZONE · camera_fail · camera_restore · or the fault as JSON";

/// The reason a `/reject` without one sends.
pub const DEFAULT_REJECT_REASON: &str = "rejected by the operator";

const INJECT_USAGE: &str = "/inject block PASSAGE | unblock PASSAGE | battery PCT | stall | unstall | incident ZONE KIND | clear ZONE | camera_fail | camera_restore | {\"fault\":…}";

/// Reads a submitted line.
pub fn parse(line: &str) -> Result<Input, SlashError> {
    let text = line.trim();
    let Some(rest) = text.strip_prefix('/') else {
        return Ok(if text.is_empty() {
            Input::Nothing
        } else {
            Input::Send(Command::Say { text: text.into() })
        });
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    let plain = |cmd: Command, usage: &'static str| {
        if args.is_empty() {
            Ok(Input::Send(cmd))
        } else {
            Err(SlashError::Usage(usage))
        }
    };
    match name.to_lowercase().as_str() {
        "estop" | "e-stop" => plain(Command::EStop, "/estop"),
        "pause" => plain(Command::Pause, "/pause"),
        "reset" | "reset-estop" => plain(Command::ResetEStop, "/reset"),
        "resume" => plain(Command::Resume, "/resume"),
        "stop" => plain(Command::Stop, "/stop"),
        "patrol" => Ok(Input::Send(Command::StartPatrol {
            route: (!args.is_empty()).then(|| args.to_string()),
        })),
        "inject" => parse_fault(args).map(|fault| Input::Send(Command::Inject { fault })),
        "ack" | "acknowledge" => Ok(Input::Send(Command::Acknowledge {
            incident_id: (!args.is_empty()).then(|| args.to_string()),
            by: "operator".into(),
        })),
        "approve" => match args.split_whitespace().collect::<Vec<_>>().as_slice() {
            [id] => Ok(Input::Answer(Command::Approve {
                approval_id: (*id).into(),
            })),
            _ => Err(SlashError::Usage(
                "/approve ID (the card's id, e.g. /approve a1)",
            )),
        },
        "reject" => {
            let (id, reason) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
            if id.is_empty() {
                return Err(SlashError::Usage("/reject ID [REASON]"));
            }
            let reason = reason.trim();
            Ok(Input::Answer(Command::Reject {
                approval_id: id.into(),
                reason: if reason.is_empty() {
                    DEFAULT_REJECT_REASON.into()
                } else {
                    reason.into()
                },
            }))
        }
        "edit" => {
            const USAGE: &str = "/edit ID [ARGS AS JSON]";
            let (id, json) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
            match (id.is_empty(), json.trim()) {
                (true, _) => Err(SlashError::Usage(USAGE)),
                (false, "") => Ok(Input::EditArgs {
                    approval_id: id.into(),
                }),
                (false, json) => serde_json::from_str(json)
                    .map(|args| {
                        Input::Answer(Command::Edit {
                            approval_id: id.into(),
                            args,
                        })
                    })
                    .map_err(|e| SlashError::Json(e.to_string())),
            }
        }
        "help" | "?" => Ok(Input::Help),
        "quit" | "q" | "exit" => Ok(Input::Quit),
        other => Err(SlashError::Unknown(other.to_string())),
    }
}

fn parse_fault(args: &str) -> Result<Fault, SlashError> {
    if args.starts_with('{') {
        return serde_json::from_str(args).map_err(|_| SlashError::Usage(INJECT_USAGE));
    }
    let words: Vec<&str> = args.split_whitespace().collect();
    let fault = match words.as_slice() {
        ["block", p] => Fault::Block {
            passage: (*p).into(),
        },
        ["unblock", p] => Fault::Unblock {
            passage: (*p).into(),
        },
        ["battery", pct] => Fault::SetBattery {
            pct: pct
                .trim_end_matches('%')
                .parse()
                .ok()
                .filter(|p: &f64| (0.0..=100.0).contains(p))
                .ok_or_else(|| SlashError::Number {
                    value: (*pct).into(),
                    what: "battery percentage (0–100)",
                })?,
        },
        ["stall"] => Fault::Stall,
        ["unstall"] => Fault::Unstall,
        ["incident", zone, kind] => Fault::Incident {
            zone: (*zone).into(),
            kind: (*kind).into(),
        },
        ["clear", zone] => Fault::ClearIncident {
            zone: (*zone).into(),
        },
        ["camera_fail", reason @ ..] => Fault::CameraFail {
            reason: if reason.is_empty() {
                "no frames from the camera".into()
            } else {
                reason.join(" ")
            },
        },
        ["camera_restore"] => Fault::CameraRestore,
        _ => return Err(SlashError::Usage(INJECT_USAGE)),
    };
    Ok(fault)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_are_acknowledged_and_the_camera_can_fail() {
        assert_eq!(
            parse("/ack i2").unwrap(),
            Input::Send(Command::Acknowledge {
                incident_id: Some("i2".into()),
                by: "operator".into()
            })
        );
        assert!(matches!(
            parse("/ack").unwrap(),
            Input::Send(Command::Acknowledge {
                incident_id: None,
                ..
            })
        ));
        assert_eq!(
            parse("/inject camera_fail lens covered").unwrap(),
            Input::Send(Command::Inject {
                fault: Fault::CameraFail {
                    reason: "lens covered".into()
                }
            })
        );
    }

    #[test]
    fn utterances_and_commands_are_told_apart() {
        assert_eq!(
            parse(" 去厨房 ").unwrap(),
            Input::Send(Command::Say {
                text: "去厨房".into()
            })
        );
        assert_eq!(parse("").unwrap(), Input::Nothing);
        assert_eq!(parse("/estop").unwrap(), Input::Send(Command::EStop));
        assert_eq!(parse("/Pause").unwrap(), Input::Send(Command::Pause));
        assert_eq!(parse("/reset").unwrap(), Input::Send(Command::ResetEStop));
        assert_eq!(parse("/resume").unwrap(), Input::Send(Command::Resume));
        assert_eq!(
            parse("/patrol default").unwrap(),
            Input::Send(Command::StartPatrol {
                route: Some("default".into())
            })
        );
        assert_eq!(parse("/help").unwrap(), Input::Help);
        assert_eq!(parse("/quit").unwrap(), Input::Quit);
    }

    #[test]
    fn faults_read_in_words_or_json() {
        let inject = |s: &str| match parse(s).unwrap() {
            Input::Send(Command::Inject { fault }) => fault,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            inject("/inject block kitchen_door"),
            Fault::Block {
                passage: "kitchen_door".into()
            }
        );
        assert_eq!(
            inject("/inject battery 15%"),
            Fault::SetBattery { pct: 15.0 }
        );
        assert_eq!(
            inject("/inject incident kitchen smoke"),
            Fault::Incident {
                zone: "kitchen".into(),
                kind: "smoke".into()
            }
        );
        assert_eq!(inject(r#"/inject {"fault":"stall"}"#), Fault::Stall);
    }

    #[test]
    fn bad_commands_say_what_was_expected() {
        assert_eq!(
            parse("/fly").unwrap_err().to_string(),
            "unknown command `/fly`; type /help for the list"
        );
        assert_eq!(
            parse("/inject battery lots").unwrap_err().to_string(),
            "`lots` is not a battery percentage (0–100)"
        );
        assert!(
            parse("/inject wobble")
                .unwrap_err()
                .to_string()
                .starts_with("usage: /inject block PASSAGE")
        );
        assert_eq!(parse("/stop now").unwrap_err().to_string(), "usage: /stop");
    }
}
