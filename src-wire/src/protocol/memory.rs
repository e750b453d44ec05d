//! What a model decision was given from memory: reported in `memory` events.

use serde::{Deserialize, Serialize};

/// One memory put into the model's input, and why.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryUse {
    /// The memory's id.
    pub id: u64,
    /// Its rank score.
    pub score: f32,
    /// Raw BM25, when it matched terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f32>,
    /// Cosine with the query, when the model is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense: Option<f32>,
    /// The memory's text (cut to 200 characters).
    pub text: String,
    /// Why it was chosen, in words.
    pub why: String,
}

/// How much a run remembers (the snapshot's `memory`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySize {
    /// Searchable long-term memories (summaries, imported facts).
    pub memories: u64,
    /// Messages kept (every session's).
    pub messages: u64,
}
