//! How much a skill can change the world: the policy's first question, shown
//! with every approval and every MCP tool.

use serde::{Deserialize, Serialize};

/// Risk level (seed 001 §5).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Read,
    /// A write that is easy to undo.
    LowWrite,
    /// A write with consequences (locks, gas, leaving the apartment…).
    HighWrite,
}

impl Risk {
    /// The name as written in config and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::LowWrite => "low_write",
            Self::HighWrite => "high_write",
        }
    }
}
