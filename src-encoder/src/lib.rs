//! The sentence encoder robobrain's memory embeds with: the BERT forward
//! pass all-MiniLM-L6-v2 needs ([`bert`]) on vectorised inner loops
//! ([`kernels`]). Tokenising and pooling live with the caller
//! (`robobrain_core::memory::embed`).
//!
//! A crate of its own so that it is compiled with optimisations even in
//! test builds (`[profile.dev.package.robobrain-encoder]` in the workspace
//! manifest): unoptimised, a forward pass is a hundred times slower, and
//! the memory tests embed hundreds of sentences.

pub mod bert;
pub mod kernels;

pub use bert::{Bert, BertConfig, WeightsError};
