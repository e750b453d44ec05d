//! Where a command came from: the door it came through and what that door
//! knows about who sent it ([`Origin`]). Every [`Command`](super::Command)
//! is handed to the core with one (`Runtime::send`, `Engine::take_in`,
//! `Engine::submit`); the events it causes carry it, an approval card shows
//! who asked for the step, and the audit log keeps it.
//!
//! The origin is stamped by the door, never read from the wire: a face
//! cannot claim to be another. What a door can honestly say differs — a
//! WebSocket knows its connection and the token's role; an MQTT subscriber
//! is not told which broker user published a message, only the topic, so
//! an MQTT door names the topic, whose ACL decides who may write to it.

use serde::{Deserialize, Serialize};

use super::frame::Role;

/// Where a command came from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The door it came through.
    pub door: Door,
    /// What the door lets it do: an `operator` acts, a `viewer` only
    /// watches (its commands are refused, `watch_only`).
    pub role: Role,
    /// What the door knows about the sender, in words: a connection's id
    /// and peer (`ws#3 127.0.0.1:51234`), a topic (`topic
    /// robobrain/r1/command`), a file. Empty when the door says it all
    /// (the console on this terminal).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// The doors a command comes in through.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Door {
    /// The console in this process (`robobrain`, `robobrain tui`).
    Console,
    /// Operator lines: `robobrain headless`'s standard input, `robobrain
    /// mcp`'s `--operator` file (or its stdin beside `--http`).
    Headless,
    /// `robobrain serve`'s WebSocket: the page, and `robobrain tui --connect`.
    Web,
    /// An MCP client (`robobrain mcp`, over stdio or HTTP).
    Mcp,
    /// The desktop app's window, over Tauri IPC.
    Desktop,
    /// A Home Assistant button, over MQTT discovery.
    HomeAssistant,
    /// A fleet console, over the fleet's MQTT topics.
    Fleet,
    /// A VDA 5050 master control: an order or an instant action.
    Vda5050,
    /// A scenario file's scripted commands.
    Scenario,
    /// The command line that started the run (`--say`).
    CommandLine,
    /// Words the robot heard through its microphone (`listen`): anyone in
    /// the room.
    Voice,
}

impl Door {
    /// The name as on the wire (`home_assistant`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Console => "console",
            Self::Headless => "headless",
            Self::Web => "web",
            Self::Mcp => "mcp",
            Self::Desktop => "desktop",
            Self::HomeAssistant => "home_assistant",
            Self::Fleet => "fleet",
            Self::Vda5050 => "vda5050",
            Self::Scenario => "scenario",
            Self::CommandLine => "command_line",
            Self::Voice => "voice",
        }
    }
}

impl Door {
    /// Whether a command from this door only *asks*: a task it queues
    /// waits for an operator's approval before the robot first moves for
    /// it (issue 35 item 2). Home Assistant's buttons are such a door: any
    /// user of the home's broker (or an automation) can press them, and a
    /// press is not an operator's deliberate act.
    pub fn only_asks(self) -> bool {
        matches!(self, Self::HomeAssistant)
    }
}

impl std::fmt::Display for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Origin {
    /// An operator's command through `door`, with what the door knows.
    pub fn new(door: Door, detail: impl Into<String>) -> Self {
        Self {
            door,
            role: Role::Operator,
            detail: detail.into(),
        }
    }

    /// The same origin with the role its token or connection has.
    #[must_use]
    pub fn with_role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The console on this terminal.
    pub fn console() -> Self {
        Self::new(Door::Console, "")
    }

    /// A line on `robobrain headless`'s standard input.
    pub fn headless() -> Self {
        Self::new(Door::Headless, "stdin")
    }

    /// The command line that started the run (`--say`).
    pub fn command_line() -> Self {
        Self::new(Door::CommandLine, "--say")
    }

    /// The desktop app's window.
    pub fn desktop() -> Self {
        Self::new(Door::Desktop, "ipc")
    }

    /// A scenario file, by name.
    pub fn scenario(file: impl Into<String>) -> Self {
        Self::new(Door::Scenario, file)
    }

    /// Whether the door lets it act (an `operator`), rather than only watch.
    pub fn may_act(&self) -> bool {
        self.role == Role::Operator
    }
}

impl std::fmt::Display for Origin {
    /// `console`, `web: ws#3 127.0.0.1:51234`, `web viewer: ws#4 …`,
    /// `home_assistant: topic …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.door.as_str())?;
        if self.role == Role::Viewer {
            f.write_str(" viewer")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_has_its_documented_json_and_words() {
        let origin = Origin::new(Door::Web, "ws#3 127.0.0.1:51234").with_role(Role::Viewer);
        let v = serde_json::to_value(&origin).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"door": "web", "role": "viewer", "detail": "ws#3 127.0.0.1:51234"})
        );
        assert_eq!(serde_json::from_value::<Origin>(v).unwrap(), origin);
        assert_eq!(origin.to_string(), "web viewer: ws#3 127.0.0.1:51234");
        assert!(!origin.may_act());
        assert_eq!(Origin::console().to_string(), "console");
        assert_eq!(
            serde_json::to_value(Origin::console()).unwrap(),
            serde_json::json!({"door": "console", "role": "operator"})
        );
        assert!(Origin::console().may_act());
    }
}
