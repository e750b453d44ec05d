//! robobrain-llm: talking to OpenAI-compatible models, and sound as WAV.
//!
//! - [`llm`]: the client, prompts, retries, the background worker, and
//!   `mock-llm` (a real HTTP server speaking the protocol from a script).
//! - [`audio`]: WAV files, and sound through cpal (feature `audio`).

pub mod audio;
pub mod llm;

use robobrain_wire::{matcher, rng, source};
