//! The frames a face gets over a wire — the web page and `robobrain tui
//! --connect` over `robobrain serve`'s WebSocket, the desktop app over Tauri
//! IPC: [`Hello`] first, then a snapshot, then every event
//! ([`ServerMessage`], tagged by `type`). A face in the same process gets
//! the same things over channels (`crate::runtime::Runtime`); a remote face
//! speaks this. A fleet page (`serve --fleet`, the desktop app's fleet
//! window) gets the same frame type: `fleet_hello` first, then the board
//! (`fleet`), the frames of the robot it opened wrapped in `robot`, and
//! `sent`/`reply` for its commands.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fleet::{FleetBoard, Reply};
use super::run::RunInfo;
use super::{Event, Risk, Snapshot};
use crate::mapview::MapView;
use crate::world::World;

/// What a connected face may do.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Sends commands: says, approves, edits, rejects, stops.
    Operator,
    /// Watches only; its commands are refused.
    Viewer,
}

/// A skill as a face needs it to edit an approval's arguments.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillView {
    /// Its name (`navigate_to`, `mcp.time.get_current_time`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON Schema.
    pub args_schema: Value,
    /// Its risk.
    pub risk: Risk,
}

/// The first frame of every connection.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// What this face may do.
    pub role: Role,
    /// The run's thread.
    pub thread_id: String,
    /// The map, to draw.
    pub map: MapView,
    /// The whole world (zones and their names, routes, the robot's limits),
    /// for a face that plans and checks as the console does.
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub world: World,
    /// The registry's skills, for the approval editor.
    pub skills: Vec<SkillView>,
    /// What the run is made of.
    pub run: RunInfo,
}

/// One frame from the run to a face, tagged by `type`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// First, always.
    Hello(Box<Hello>),
    /// The whole state: after `hello` (unless resuming), when the face fell
    /// behind, and every `snapshot_ms` for a face that asked.
    Snapshot {
        /// The state; its `seq` is the last event it covers.
        snapshot: Box<Snapshot>,
    },
    /// One event, in `seq` order.
    Event {
        /// The event.
        event: Box<Event>,
        /// The event in words, as every face says it
        /// (`describe::text`): a face shows this, never words events itself.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
    },
    /// A viewer sent a command.
    Refused {
        /// Why.
        reason: String,
    },
    /// A line that is not a command, or a command the brain could not take.
    Error {
        /// `invalid_command`, `line_too_long`, `utterance_too_long`,
        /// `invalid_utf8`, `not_sent`; on a fleet page also
        /// `invalid_request`, `unknown_robot`, `not_heard`.
        code: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// The brain stopped, or (on a fleet page) the broker connection
    /// stopped for good.
    Closed {
        /// Why.
        reason: String,
    },
    /// A fleet page's first frame: this page shows a fleet, and may do what
    /// `role` allows.
    FleetHello {
        /// What this page may do.
        role: Role,
        /// Where the broker is.
        broker: String,
    },
    /// The fleet's board, whenever it changed.
    Fleet(Box<FleetBoard>),
    /// A frame of the robot a fleet page opened, exactly as `serve` sends
    /// its own: `hello` (with the page's role), `snapshot`, `event`.
    Robot {
        /// The robot.
        robot: String,
        /// The frame.
        message: Box<ServerMessage>,
    },
    /// A command went out to a robot with this id.
    Sent {
        /// The robot.
        robot: String,
        /// The command's id (the robot's reply carries it).
        id: String,
    },
    /// A robot's answer to a command.
    Reply {
        /// The robot.
        robot: String,
        /// The answer.
        reply: Reply,
    },
}

impl ServerMessage {
    /// The frame as JSON text.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            // Every field is plain data; this cannot fail, but a frame must go out.
            format!(r#"{{"type":"error","code":"internal","message":"unserialisable frame: {e}"}}"#)
        })
    }

    /// A `snapshot` frame.
    pub fn snapshot(snapshot: Snapshot) -> Self {
        Self::Snapshot {
            snapshot: Box::new(snapshot),
        }
    }

    /// An `event` frame, with the event in words (`describe::text`).
    pub fn event(event: Event) -> Self {
        Self::Event {
            text: super::describe::text(&event.kind),
            event: Box::new(event),
        }
    }

    /// An `error` frame: a code and what was wrong.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Self::Error {
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// The frame that says the brain stopped.
    pub fn closed() -> Self {
        Self::Closed {
            reason: "the brain stopped".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::EventKind;

    #[test]
    fn frames_are_tagged_by_type_and_read_back() {
        let event = Event {
            seq: 3,
            time: 1.5,
            wall_ms: 7,
            thread_id: "t".into(),
            step: 2,
            origin: None,
            kind: EventKind::Log {
                level: "info".into(),
                message: "hi".into(),
            },
        };
        let text = ServerMessage::event(event.clone()).to_text();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["type"], "event");
        assert_eq!(v["event"]["kind"], "log");
        assert_eq!(v["event"]["seq"], 3);
        // The words every face shows, from the one describer.
        assert_eq!(v["text"], "hi");
        assert_eq!(
            serde_json::from_str::<ServerMessage>(&text).unwrap(),
            ServerMessage::event(event)
        );
        let refused = ServerMessage::Refused {
            reason: "no".into(),
        };
        assert_eq!(refused.to_text(), r#"{"type":"refused","reason":"no"}"#);
        let world = World::builtin("apartment").unwrap();
        let hello = ServerMessage::Hello(Box::new(Hello {
            role: Role::Viewer,
            thread_id: "t".into(),
            map: MapView::of(&world),
            world,
            skills: Vec::new(),
            run: RunInfo::default(),
        }));
        let v: Value = serde_json::from_str(&hello.to_text()).unwrap();
        assert_eq!(v["type"], "hello");
        assert_eq!(v["role"], "viewer");
        assert_eq!(v["map"]["name"], "apartment");
        assert_eq!(v["run"]["brain"]["kind"], "rules");
        assert_eq!(serde_json::from_value::<ServerMessage>(v).unwrap(), hello);
    }
}
