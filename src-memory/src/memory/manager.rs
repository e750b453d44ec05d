//! [`MemoryManager`] (seed 004): messages go into the short-term window;
//! a full window is summarised and analysed into a long-term memory;
//! retrieval, stats and the planner's memory context come from here.
//! Synchronous and possibly slow (embedding, model calls): the running
//! brain keeps it on its own thread ([`super::service`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;

use super::context::MemoryContext;
use super::embed::Embedder;
use super::long::{LongMemory, LongStats, Retrieved};
use super::short::{ShortMemory, transcript};
use super::store::{Message, NewMemory};
use super::summary::{ModelHelper, summarise};
use super::{MemoryConfig, MemoryError, prefs};
use crate::llm::LlmConfig;

/// What adding a message did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Added {
    /// The message as stored.
    pub message: Message,
    /// The memory its window was summarised into, when it closed one.
    pub summarized: Option<u64>,
    /// Memories archived to stay within `max_memories`.
    pub archived: Vec<u64>,
}

/// Stats for `memory stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// The long-term store.
    #[serde(flatten)]
    pub long: LongStats,
    /// This session's id.
    pub session: String,
    /// Messages in this session.
    pub session_messages: usize,
    /// Messages in the open window.
    pub window_messages: usize,
    /// The window size.
    pub window_size: usize,
    /// Retrieval mode and alpha.
    pub mode: String,
    /// BM25's weight in hybrid mode.
    pub alpha: f64,
    /// Summaries by the model or extractive.
    pub summarizer: String,
}

/// Loads the embedding model: the model, or why there is none. A model that
/// is present but unusable is an `Err` here as well, with the reason.
pub fn load_embedder(dir: &Path) -> Result<Arc<Embedder>, MemoryError> {
    Embedder::load(dir).map(Arc::new)
}

/// Short- and long-term memory together.
pub struct MemoryManager {
    config: MemoryConfig,
    short: ShortMemory,
    long: LongMemory,
    model: Option<ModelHelper>,
    notices: Vec<String>,
}

impl MemoryManager {
    /// Opens the memory in `dir` for `session` (its earlier messages are
    /// restored); `llm` decides whether the model summarises.
    pub fn open(
        config: &MemoryConfig,
        dir: &Path,
        llm: &LlmConfig,
        session: &str,
        embedder: Result<Arc<Embedder>, String>,
    ) -> Result<Self, MemoryError> {
        let (long, mut notices) = LongMemory::open(dir, config, embedder)?;
        let model = if config.use_model {
            match ModelHelper::new(llm) {
                Ok(m) => m,
                Err(e) => {
                    notices.push(format!(
                        "summary model unavailable ({e}): extractive summaries"
                    ));
                    None
                }
            }
        } else {
            None
        };
        let mut short = ShortMemory::new(session, config.conversation_window_size);
        short.restore(long.db().last_messages(session, 10_000)?);
        Ok(Self {
            config: config.clone(),
            short,
            long,
            model,
            notices,
        })
    }

    /// Opens the memory the config names: `dir` under `runs_dir` and the
    /// model folder; a missing model means BM25 alone (a notice).
    pub fn open_configured(
        config: &MemoryConfig,
        runs_dir: &Path,
        llm: &LlmConfig,
        session: &str,
    ) -> Result<Self, MemoryError> {
        let embedder = load_embedder(&config.model_path()).map_err(|e| e.to_string());
        Self::open(config, &config.dir_in(runs_dir), llm, session, embedder)
    }

    /// Notices since the last call (repairs, fallbacks, the model's absence).
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.short.session_id
    }

    /// The memory folder's long-term store.
    pub fn long(&self) -> &LongMemory {
        &self.long
    }

    /// Checks a message: not empty, not longer than `max_message_chars`.
    pub fn check_message(&self, content: &str) -> Result<(), MemoryError> {
        if content.trim().is_empty() {
            return Err(MemoryError::EmptyMessage);
        }
        let chars = content.chars().count();
        if chars > self.config.max_message_chars {
            return Err(MemoryError::TooLong {
                chars,
                max: self.config.max_message_chars,
            });
        }
        Ok(())
    }

    /// Adds a message (`user` or `assistant`); a window it fills is summarised.
    pub fn add_message(&mut self, role: &str, content: &str) -> Result<Added, MemoryError> {
        if role != "user" && role != "assistant" {
            return Err(MemoryError::Invalid(format!(
                "role {role:?}: expected user or assistant"
            )));
        }
        self.check_message(content)?;
        let (message, closed) = self.short.append(role, content.trim(), super::now_ms());
        self.long.db().add_message(&message)?;
        let mut added = Added {
            message,
            summarized: None,
            archived: Vec::new(),
        };
        if let Some((window, window_id)) = closed {
            let (id, archived) = self.summarize_window(&window, window_id)?;
            added.summarized = Some(id);
            added.archived = archived;
        }
        Ok(added)
    }

    fn summarize_window(
        &mut self,
        window: &[Message],
        window_id: u64,
    ) -> Result<(u64, Vec<u64>), MemoryError> {
        let text = transcript(window);
        let s = summarise(window, &text, self.model.as_ref());
        self.notices.extend(s.notices);
        let mut metadata = s.metadata;
        metadata["turns"] = json!(window.iter().map(|m| m.turn_id.clone()).collect::<Vec<_>>());
        metadata["from_ms"] = json!(window.first().map_or(0, |m| m.ts_ms));
        metadata["to_ms"] = json!(window.last().map_or(0, |m| m.ts_ms));
        let memory = NewMemory {
            kind: "conversation_summary".into(),
            content: s.summary,
            original: text,
            analysis: serde_json::to_value(&s.analysis).unwrap_or_default(),
            metadata,
            session_id: self.short.session_id.clone(),
            window_id,
        };
        self.long.add_memory(&memory)
    }

    /// Stores a memory directly (a note, an import).
    pub fn add_memory(&mut self, kind: &str, content: &str) -> Result<u64, MemoryError> {
        self.check_message(content)?;
        let analysis = super::analyzer::analyze_rules(content);
        let memory = NewMemory {
            kind: kind.into(),
            content: content.trim().into(),
            original: content.into(),
            analysis: serde_json::to_value(&analysis).unwrap_or_default(),
            metadata: json!({}),
            session_id: self.short.session_id.clone(),
            window_id: self.short.window_count,
        };
        Ok(self.long.add_memory(&memory)?.0)
    }

    /// Stores many memories at once (an import); their ids and those archived.
    pub fn import_memories(
        &mut self,
        ms: &[NewMemory],
    ) -> Result<(Vec<u64>, Vec<u64>), MemoryError> {
        self.long.import(ms)
    }

    /// The `k` memories most relevant to `query` (marked as used).
    pub fn retrieve_relevant_memories(
        &mut self,
        query: &str,
        k: usize,
    ) -> Result<Vec<Retrieved>, MemoryError> {
        let found = self.long.retrieve(query, k, self.config.mode)?;
        let ids: Vec<u64> = found.iter().map(|r| r.hit.id).collect();
        self.long.db().touch(&ids)?;
        Ok(found)
    }

    /// Closes the open window (summarising it) so nothing said is left
    /// only in the short-term memory; the indexes are already on disk.
    pub fn save_state(&mut self) -> Result<(), MemoryError> {
        if !self.short.window.is_empty() {
            let (window, id) = self.short.rollover();
            self.summarize_window(&window, id)?;
        }
        Ok(())
    }

    /// Counts, sizes and settings.
    pub fn get_stats(&self) -> Result<Stats, MemoryError> {
        Ok(Stats {
            long: self.long.stats()?,
            session: self.short.session_id.clone(),
            session_messages: self.short.history.len(),
            window_messages: self.short.window.len(),
            window_size: self.config.conversation_window_size,
            mode: self.config.mode.as_str().into(),
            alpha: self.config.alpha,
            summarizer: self.model.as_ref().map_or_else(
                || "extractive".to_string(),
                |m| format!("model:{}", m.model()),
            ),
        })
    }

    /// What the planner gets for `query` (seed 001 §2.2): this session's
    /// summaries, its recent turns, preferences, session state and the
    /// retrieved memories with their scores.
    pub fn context(&mut self, query: &str) -> Result<MemoryContext, MemoryError> {
        let retrieved = if query.trim().is_empty() {
            Vec::new()
        } else {
            self.retrieve_relevant_memories(query, self.config.retrieve_k)?
        };
        self.context_with(query, retrieved)
    }

    /// [`MemoryManager::context`] with memories already retrieved.
    pub fn context_with(
        &self,
        query: &str,
        retrieved: Vec<Retrieved>,
    ) -> Result<MemoryContext, MemoryError> {
        let db = self.long.db();
        Ok(MemoryContext {
            query: query.to_string(),
            mode: self.config.mode.as_str().into(),
            summaries: db
                .session_memories(&self.short.session_id, 3)?
                .into_iter()
                .map(|m| m.content)
                .collect(),
            recent: self
                .short
                .recent(2 * self.config.conversation_window_size)
                .to_vec(),
            retrieved,
            prefs: prefs::list(db)?,
            state: prefs::states(db, &self.short.session_id)?,
        })
    }

    /// The memory folder.
    pub fn dir(&self) -> PathBuf {
        self.long.stats().map(|s| s.dir).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-mem-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn memory_manager_summarises_full_windows_and_retrieves_them() {
        let dir = temp("mgr");
        let config = MemoryConfig::default();
        let llm = LlmConfig::default();
        let mut m = MemoryManager::open(
            &config,
            &dir,
            &llm,
            "s1",
            Err("no model in this test".into()),
        )
        .unwrap();
        assert!(m.take_notices().iter().any(|n| n.contains("BM25 alone")));
        assert!(matches!(
            m.add_message("user", "  "),
            Err(MemoryError::EmptyMessage)
        ));
        let long = "x".repeat(config.max_message_chars + 1);
        let e = m.add_message("user", &long).unwrap_err().to_string();
        assert!(e.contains("at most 4000"), "{e}");
        m.add_message("user", "我喜欢卧室温度保持在22度").unwrap();
        m.add_message("assistant", "好的，我记住了：卧室22度。")
            .unwrap();
        let added = m
            .add_message("user", "Also, water the balcony plants on Sundays.")
            .unwrap();
        let id = added.summarized.unwrap();
        let found = m.retrieve_relevant_memories("卧室温度", 3).unwrap();
        assert_eq!(found.first().map(|r| r.hit.id), Some(id));
        assert!(found[0].memory.content.contains("22"), "{found:?}");
        assert_eq!(found[0].memory.analysis["rooms"][0], "bedroom");
        m.add_message("assistant", "Noted: balcony plants on Sundays.")
            .unwrap();
        m.save_state().unwrap();
        let stats = m.get_stats().unwrap();
        assert_eq!((stats.long.db.memories, stats.long.db.messages), (2, 4));
        drop(m);
        // Reopened: the same memories, found again, nothing rebuilt.
        let mut again = MemoryManager::open(&config, &dir, &llm, "s1", Err("none".into())).unwrap();
        assert!(!again.take_notices().iter().any(|n| n.contains("rebuilt")));
        assert_eq!(again.get_stats().unwrap().session_messages, 4);
        let ctx = again.context("balcony plants").unwrap();
        assert!(
            ctx.retrieved[0].memory.content.contains("balcony"),
            "{ctx:?}"
        );
        assert_eq!(ctx.summaries.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_corrupt_bm25_index_is_rebuilt_from_the_database() {
        let dir = temp("corrupt");
        let config = MemoryConfig::default();
        let llm = LlmConfig::default();
        {
            let mut m = MemoryManager::open(&config, &dir, &llm, "s", Err("none".into())).unwrap();
            m.add_memory("note", "the spare key is under the kitchen plant pot")
                .unwrap();
            m.add_memory("note", "车库的门每天晚上十点自动关闭")
                .unwrap();
        }
        let bm25 = dir.join("bm25");
        for entry in std::fs::read_dir(&bm25).unwrap() {
            let p = entry.unwrap().path();
            std::fs::write(&p, b"garbage").unwrap();
        }
        let mut m = MemoryManager::open(&config, &dir, &llm, "s", Err("none".into())).unwrap();
        let notices = m.take_notices();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("rebuilt from the database")),
            "{notices:?}"
        );
        let found = m.retrieve_relevant_memories("车库门", 1).unwrap();
        assert!(found[0].memory.content.contains("车库"), "{found:?}");
        drop(m);
        std::fs::remove_dir_all(&bm25).unwrap();
        let mut m2 = MemoryManager::open(&config, &dir, &llm, "s", Err("none".into())).unwrap();
        assert!(m2.take_notices().iter().any(|n| n.contains("rebuilt")));
        assert_eq!(
            m2.retrieve_relevant_memories("spare key", 1).unwrap().len(),
            1
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_oldest_unused_memories_are_archived_beyond_the_limit() {
        let dir = temp("evict");
        let config = MemoryConfig {
            max_memories: 2,
            ..MemoryConfig::default()
        };
        let mut m = MemoryManager::open(
            &config,
            &dir,
            &LlmConfig::default(),
            "s",
            Err("none".into()),
        )
        .unwrap();
        let a = m.add_memory("note", "alpha apples").unwrap();
        m.add_memory("note", "beta bananas").unwrap();
        m.add_memory("note", "gamma grapes").unwrap();
        assert!(
            m.retrieve_relevant_memories("apples", 5)
                .unwrap()
                .is_empty()
        );
        let stats = m.get_stats().unwrap();
        assert_eq!(
            (
                stats.long.db.memories,
                stats.long.db.archived,
                stats.long.bm25_docs
            ),
            (2, 1, 2)
        );
        assert_eq!(
            m.long().db().memory(a).unwrap().unwrap().content,
            "alpha apples"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
