//! The fleet as a face sees it (`robobrain serve --fleet`, the desktop
//! app's fleet window, docs/web.md): the board — every robot in one row,
//! one approval queue across the fleet — and a robot's answer to a command
//! (docs/fleet.md). They travel in [`super::ServerMessage`]'s fleet frames;
//! `robobrain-fleet` builds them from what it hears on the broker.

use serde::{Deserialize, Serialize};

use super::{Activity, ApprovalView, Mode};

/// What became of a command, or of a message that was not one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyStatus {
    /// Put on the run's queue.
    Accepted,
    /// Its id was seen before: not applied again.
    Duplicate,
    /// The run refused it (its queue is full, it has stopped, not over the fleet).
    Refused,
    /// Malformed or oversized: nothing was done.
    Rejected,
}

/// The answer on a robot's reply topic.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The command's id (absent when none could be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What became of it.
    pub status: ReplyStatus,
    /// Why, for `refused` and `rejected`: a code (`malformed`, `too_large`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    /// In words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The topic the message came on (for rejections).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topic: String,
}

/// An approval waiting somewhere in the fleet.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetApproval {
    /// The robot it waits on.
    pub robot: String,
    /// The approval.
    pub approval: ApprovalView,
}

/// One robot's row on the board.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RobotRow {
    /// Its id.
    pub id: String,
    /// `ONLINE`, `OFFLINE`, `CONNECTIONBROKEN`, or `?` (not heard yet).
    pub connection: String,
    /// Whether it is online.
    pub online: bool,
    /// The kernel's mode (absent before its first snapshot).
    pub mode: Option<Mode>,
    /// Whether its E-stop is latched.
    pub estop: bool,
    /// What it is doing.
    pub activity: Option<Activity>,
    /// Its battery, in percent.
    pub battery_pct: Option<f64>,
    /// The zone it is in.
    pub zone: Option<String>,
    /// Its current task: the first one not over (`title (status)`).
    pub task: Option<String>,
    /// Alerts still open.
    pub alerts: usize,
    /// Approvals waiting on it.
    pub approvals: usize,
    /// Its world (map) name.
    pub world: Option<String>,
}

/// The whole fleet on one board.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetBoard {
    /// Where the broker is (`mqtt://…`).
    pub broker: String,
    /// Whether the link to the broker is up.
    pub connected: bool,
    /// Every robot heard of, by id.
    pub robots: Vec<RobotRow>,
    /// Every approval waiting across the fleet (online robots), robot by robot.
    pub approvals: Vec<FleetApproval>,
}

impl FleetBoard {
    /// How many robots are online.
    pub fn online(&self) -> usize {
        self.robots.iter().filter(|r| r.online).count()
    }
}
