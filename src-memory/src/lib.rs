//! robobrain-memory: conversation windows, long-term summaries, hybrid
//! (BM25 + embedding) retrieval over Chinese and English, preferences.

pub mod memory;

use robobrain_llm::llm;
#[cfg(test)]
use robobrain_wire::testing;
use robobrain_wire::{places, progress, protocol};
