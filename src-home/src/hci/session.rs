//! Session state for references (seed 001 §2.2 `session:{id}:state`): the
//! last devices and room talked about and the last plan, so that "把它关掉"
//! after "打开客厅灯" means the living-room light; and a clarifying question
//! waiting for its answer.

use serde::{Deserialize, Serialize};

use super::verb::Verb;

/// A question asked and not yet answered: which of `candidates` the user meant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// What the user wanted done (`None`: they asked about it).
    pub verb: Option<Verb>,
    /// The devices it could be, by id.
    pub candidates: Vec<String>,
}

/// What the conversation refers back to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The devices of the last turn, by id ("it", "them").
    pub last_devices: Vec<String>,
    /// The room of the last turn ("there").
    pub last_room: Option<String>,
    /// The last plan's id.
    pub last_plan: Option<String>,
    /// A clarifying question waiting for its answer.
    pub pending: Option<Pending>,
    /// The language of the last turn: a plan confirmed later reports in it.
    #[serde(default)]
    pub lang: crate::lines::Lang,
}
