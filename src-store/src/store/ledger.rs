//! The side-effect ledger: one row per goal sent to the robot, keyed
//! (thread, step, op index), written `started` before the goal leaves and
//! moved to `accepted` and `done` as the robot answers.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::link::LinkRequest;

/// Where a side effect stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerStatus {
    /// Recorded; the robot may or may not have received it.
    Started,
    /// The robot acknowledged it.
    Accepted,
    /// It ended; the row holds the result. Never sent again.
    Done,
}

impl LedgerStatus {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Accepted => "accepted",
            Self::Done => "done",
        }
    }

    /// From its stored form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "started" => Some(Self::Started),
            "accepted" => Some(Self::Accepted),
            "done" => Some(Self::Done),
            _ => None,
        }
    }
}

/// One side effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Step of the dispatch node that sent it.
    pub step: u64,
    /// Index of the op within the decision.
    pub op: u32,
    /// The goal id (unique across threads: it starts with the thread id).
    pub goal_id: String,
    /// The skill that sent it.
    pub skill: String,
    /// The exact request sent, so a reconciled goal the robot never heard of
    /// is re-sent unchanged.
    pub request: LinkRequest,
    /// Where it stands.
    pub status: LedgerStatus,
    /// The result, once done.
    pub result: Option<Value>,
}

/// The goal id for ledger key (`thread`, `step`, `op`).
pub fn goal_id(thread: &str, step: u64, op: usize) -> String {
    format!("{thread}/g{step}.{op}")
}

pub use crate::protocol::describe::short_goal_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_stored_as_words_and_read_back() {
        for (status, word) in [
            (LedgerStatus::Started, "started"),
            (LedgerStatus::Accepted, "accepted"),
            (LedgerStatus::Done, "done"),
        ] {
            assert_eq!(status.as_str(), word);
            assert_eq!(LedgerStatus::parse(word), Some(status));
            assert_eq!(serde_json::to_value(status).unwrap(), word);
        }
        assert_eq!(LedgerStatus::parse("Done"), None);
        assert_eq!(LedgerStatus::parse(""), None);
    }

    #[test]
    fn a_goal_id_names_its_thread_step_and_op() {
        let id = goal_id("patrol-1", 12, 3);
        assert_eq!(id, "patrol-1/g12.3");
        assert_eq!(short_goal_id(&id), "g12.3");
        assert_eq!(short_goal_id("a/b/g1.0"), "g1.0");
    }
}
