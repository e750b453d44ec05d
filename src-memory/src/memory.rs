//! Memory that remembers (seed 004, seed 001 §2.2): what was said, what it
//! came to, and what the operator prefers — retrievable offline.
//!
//! - [`short`]: the session's messages and the current window of N turns,
//!   rolled over into summarisation when full.
//! - [`long`]: long-term memories (summaries of closed windows with their
//!   analysis) in SQLite, with eviction, reload and stats.
//! - [`analyzer`]: keywords, entities, rooms, devices and times of a text —
//!   by the model when one is configured, by rules otherwise.
//! - [`summary`]: a closed window's summary — the model's summary role, or
//!   an extractive one.
//! - [`tokenize`]: Chinese (jieba) and English terms, shared by BM25 and the analyzer.
//! - [`bm25`]: a tantivy index over those terms, on disk.
//! - [`embed`]: all-MiniLM-L6-v2 sentence embeddings (no hub, no Python at run time) on the
//!   `robobrain-encoder` crate's BERT forward pass.
//! - [`dense`]: the vectors, on disk, searched exhaustively.
//! - [`hybrid`]: score normalisation and fusion with weight `alpha` (pure).
//! - [`retriever`]: BM25 + dense behind one `search`, persisted and rebuilt.
//! - [`store`]: the memory database (its own versioned migrations).
//! - [`prefs`]: explicit preferences and the session state ("it", "there").
//! - [`manager`]: [`MemoryManager`] — add_message, retrieve, save, stats.
//! - [`context`]: the planner's memory input within a token budget.
//! - [`service`]: the manager on its own thread, so the kernel never waits.
//! - [`eval`]: corpus/query files and the retrieval metrics.
//!
//! `docs/memory.md` describes the choices (normalisation, eviction, files).

pub mod analyzer;
pub mod bm25;
pub mod context;
pub mod dense;
pub mod embed;
pub mod eval;
pub mod hybrid;
pub mod long;
pub mod manager;
pub mod prefs;
pub mod retriever;
pub mod service;
pub mod short;
pub mod store;
pub mod summary;
pub mod tokenize;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use crate::places::{
    EMBED_MODEL_ENV as MODEL_ENV, default_embed_model_dir as default_model_dir,
};

pub use manager::MemoryManager;
pub use retriever::{Hit, HybridRetriever};
pub use service::MemoryHandle;

/// How memories are looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Term matching only (tantivy BM25).
    Bm25,
    /// Sentence embeddings only (cosine).
    Dense,
    /// Both, normalised and fused with `alpha`.
    #[default]
    Hybrid,
}

impl Mode {
    /// The name as written in config and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Dense => "dense",
            Self::Hybrid => "hybrid",
        }
    }

    /// Parses `bm25`, `dense` or `hybrid`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bm25" => Some(Self::Bm25),
            "dense" => Some(Self::Dense),
            "hybrid" => Some(Self::Hybrid),
            _ => None,
        }
    }
}

/// Memory settings (`[memory]` in `robobrain.toml`; docs/config.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Whether a run remembers (messages, summaries, retrieval for the model brain).
    pub enabled: bool,
    /// Folder of the memory database and its indexes (default `<runs_dir>/memory`).
    pub dir: Option<PathBuf>,
    /// Turns (one message each) in a conversation window before it is summarised.
    pub conversation_window_size: usize,
    /// Long-term memories kept searchable; beyond it the least recently used is archived.
    pub max_memories: usize,
    /// Weight of BM25 against the dense score in hybrid mode (0 = dense only, 1 = BM25 only).
    pub alpha: f64,
    /// Retrieval mode.
    pub mode: Mode,
    /// Folder holding all-MiniLM-L6-v2 (`model.safetensors`, `tokenizer.json`,
    /// `config.json`); default `~/.cache/robobrain/models/all-MiniLM-L6-v2`;
    /// env `ROBOBRAIN_EMBED_MODEL`.
    pub model_dir: Option<PathBuf>,
    /// Memories retrieved for the model brain's input.
    pub retrieve_k: usize,
    /// Tokens (estimated) the memory part of the model's input may take.
    pub token_budget: usize,
    /// Longest message accepted, in characters.
    pub max_message_chars: usize,
    /// Summarise and analyse with the model's summary role when `[llm]` is configured.
    pub use_model: bool,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: None,
            conversation_window_size: 3,
            max_memories: 1000,
            alpha: 0.5,
            mode: Mode::Hybrid,
            model_dir: None,
            retrieve_k: 5,
            token_budget: 600,
            max_message_chars: 4000,
            use_model: true,
        }
    }
}

impl MemoryConfig {
    /// The memory folder: `dir`, or `<runs_dir>/memory`.
    pub fn dir_in(&self, runs_dir: &Path) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| runs_dir.join("memory"))
    }

    /// The model folder: `model_dir`, or the cache `./x setup` fills.
    pub fn model_path(&self) -> PathBuf {
        self.model_dir.clone().unwrap_or_else(default_model_dir)
    }

    /// Why the embedding model cannot be loaded, when a file it needs is
    /// missing from [`MemoryConfig::model_path`] (memory then runs on BM25
    /// alone). A cheap look at the folder: the model itself loads on the
    /// memory's own thread.
    pub fn model_missing(&self) -> Option<String> {
        let dir = self.model_path();
        ["model.safetensors", "tokenizer.json", "config.json"]
            .iter()
            .find(|name| !dir.join(name).is_file())
            .map(|name| format!("no embedding model ({name} not found in {})", dir.display()))
    }

    /// Applies `ROBOBRAIN_EMBED_MODEL`.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        if let Some(v) = get(MODEL_ENV).filter(|v| !v.trim().is_empty()) {
            self.model_dir = Some(PathBuf::from(v));
        }
    }

    /// The first key that is out of range, with what was expected.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if !(0.0..=1.0).contains(&self.alpha) {
            return Some((
                "memory.alpha",
                format!("expected a weight in [0, 1], found {}", self.alpha),
            ));
        }
        for (key, v) in [
            (
                "memory.conversation_window_size",
                self.conversation_window_size,
            ),
            ("memory.max_memories", self.max_memories),
            ("memory.retrieve_k", self.retrieve_k),
            ("memory.token_budget", self.token_budget),
            ("memory.max_message_chars", self.max_message_chars),
        ] {
            if v == 0 {
                return Some((key, "expected at least 1, found 0".into()));
            }
        }
        None
    }
}

/// Why memory refused.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A message was empty (or only spaces).
    #[error("empty message: expected some text")]
    EmptyMessage,
    /// A message was longer than `max_message_chars`.
    #[error(
        "message of {chars} characters is too long: expected at most {max} (memory.max_message_chars)"
    )]
    TooLong {
        /// Its length.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// The memory database failed.
    #[error("{}: {detail}", path.display())]
    Db {
        /// The file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The BM25 index failed.
    #[error("{}: BM25 index: {detail}", path.display())]
    Index {
        /// The folder.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// Another process holds the index (another robobrain on the same memory folder).
    #[error("{}: in use by another robobrain (its BM25 index is locked); use another [memory] dir", path.display())]
    Busy {
        /// The folder.
        path: PathBuf,
    },
    /// The embedding model is not there.
    #[error("{}: no embedding model ({detail}); run `./x setup` or set {MODEL_ENV}", path.display())]
    ModelMissing {
        /// The folder.
        path: PathBuf,
        /// What is missing.
        detail: String,
    },
    /// The embedding model is there but unusable (wrong shape, bad tokenizer).
    #[error("{}: the embedding model cannot be used: {detail}", path.display())]
    Model {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// Dense retrieval asked for without a model.
    #[error("dense retrieval needs the embedding model: {0}")]
    NoDense(String),
    /// A file could not be read or written.
    #[error("{}: {detail}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// A line of an imported file is not what was expected.
    #[error("{}:{line}: {detail}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was expected.
        detail: String,
    },
    /// A preference or state key is malformed.
    #[error("{0}")]
    Invalid(String),
}

/// Estimated model tokens of `text`: one per CJK character, one per four
/// other characters (rounded up). Close enough for a budget; no tokenizer needed.
pub fn estimate_tokens(text: &str) -> usize {
    let mut cjk = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if tokenize::is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_config_checks_ranges_and_env() {
        let mut c = MemoryConfig::default();
        assert_eq!(c.problem(), None);
        c.alpha = 1.5;
        assert_eq!(c.problem().map(|p| p.0), Some("memory.alpha"));
        c.alpha = 0.5;
        c.conversation_window_size = 0;
        assert_eq!(
            c.problem().map(|p| p.0),
            Some("memory.conversation_window_size")
        );
        c.apply_env(|k| (k == MODEL_ENV).then(|| "/m".to_string()));
        assert_eq!(c.model_path(), PathBuf::from("/m"));
        assert_eq!(Mode::parse(" Dense "), Some(Mode::Dense));
        assert_eq!(Mode::parse("x"), None);
    }

    #[test]
    fn memory_token_estimate_counts_cjk_per_character() {
        assert_eq!(estimate_tokens("厨房的灯"), 4);
        assert_eq!(estimate_tokens("turn on"), 2);
        assert_eq!(estimate_tokens(""), 0);
    }
}
