//! What a clause asks a device to do: below both the parser
//! ([`super::intent`]) and the session that remembers the last one
//! ([`super::session`]), so neither imports the other's inside.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::devices::DeviceWorld;
use crate::lines::{self, Lang};

/// What a clause asks to be done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "snake_case")]
pub enum Verb {
    /// On / open.
    On,
    /// Off / close.
    Off,
    /// Lock.
    Lock,
    /// Unlock.
    Unlock,
    /// Arm the alarm.
    Arm,
    /// Disarm the alarm.
    Disarm,
    /// A level: brightness or position, percent.
    Level {
        /// 0–100.
        value: i64,
    },
    /// A temperature, °C.
    Temperature {
        /// Degrees.
        value: i64,
    },
    /// Start (a vacuum cleaning; else play, else on).
    Start,
    /// Pause (a vacuum, a player).
    Pause,
    /// Stop (a vacuum; a player pauses).
    Stop,
    /// Back to the dock (a vacuum).
    Dock,
    /// Water (an irrigation valve opens, its switch turns on).
    Water,
    /// A change from the setting the device has now: brighter, quieter,
    /// a bit warmer.
    Nudge {
        /// `brightness`, `volume`, `temperature`, `speed` or `position`.
        setting: String,
        /// How much, up or down (percent points; degrees for a temperature).
        by: i64,
    },
    /// A face.
    Expression {
        /// The expression's name.
        name: String,
    },
    /// A capability by name (what Home Assistant's grammar asked for).
    Call {
        /// The capability.
        action: String,
        /// Its arguments.
        args: Value,
    },
}

/// The verbs the lines name (`past_turn_on`, `base_turn_on`); other
/// capabilities are said as "set … to …".
pub(super) fn verb(action: &str) -> Option<&'static str> {
    Some(match action {
        "turn_on" => "turn_on",
        "turn_off" => "turn_off",
        "open" => "open",
        "close" => "close",
        "lock" => "lock",
        "unlock" => "unlock",
        "arm" => "arm",
        "disarm" => "disarm",
        "start" => "start",
        "stop" => "stop",
        "pause" => "pause",
        "play" => "play",
        "mute" => "mute",
        "unmute" => "unmute",
        _ => return None,
    })
}

/// A device's name in `lang` (its Chinese alias for Chinese, when it has one).
pub fn name_of(world: &DeviceWorld, device: &str, lang: Lang) -> String {
    world.get(device).map_or_else(
        || device.to_string(),
        |d| lines::name_in(lang, &d.name, &d.aliases),
    )
}
