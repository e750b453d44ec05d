//! Long-term memory (seed 004's LongMemory): memories in the database,
//! searchable through the [`HybridRetriever`] beside it, at most
//! `max_memories` of them — beyond that the least recently used (retrieved
//! for the model least recently; never-used ones by age) is archived: kept
//! in the database, out of the indexes, counted by `memory stats`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::embed::Embedder;
use super::retriever::{Hit, HybridRetriever};
use super::store::{DbStats, MemoryDb, MemoryRow, NewMemory};
use super::{MemoryConfig, MemoryError, Mode};

/// A retrieved memory: the row and the scores that placed it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retrieved {
    /// Its scores.
    #[serde(flatten)]
    pub hit: Hit,
    /// The stored memory.
    pub memory: MemoryRow,
}

/// Counts and sizes for `memory stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LongStats {
    /// The database's counts.
    #[serde(flatten)]
    pub db: DbStats,
    /// Documents in the BM25 index.
    pub bm25_docs: u64,
    /// Vectors held (0 without the model).
    pub vectors: usize,
    /// Why there is no dense retrieval, if there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense_unavailable: Option<String>,
    /// The memory folder.
    pub dir: PathBuf,
    /// The searchable limit.
    pub max_memories: usize,
}

/// The long-term store and its indexes.
pub struct LongMemory {
    db: MemoryDb,
    retriever: HybridRetriever,
    dir: PathBuf,
    max: usize,
}

impl LongMemory {
    /// Opens the memory in `dir` (database, then the indexes checked
    /// against it); the notices of anything repaired.
    pub fn open(
        dir: &Path,
        config: &MemoryConfig,
        embedder: Result<Arc<Embedder>, String>,
    ) -> Result<(Self, Vec<String>), MemoryError> {
        let db = MemoryDb::open(&dir.join("memory.db"))?;
        let live = db.live()?;
        let (retriever, notices) = HybridRetriever::open(dir, embedder, config.alpha, &live)?;
        Ok((
            Self {
                db,
                retriever,
                dir: dir.to_path_buf(),
                max: config.max_memories,
            },
            notices,
        ))
    }

    /// The database.
    pub fn db(&self) -> &MemoryDb {
        &self.db
    }

    /// The retriever.
    pub fn retriever(&self) -> &HybridRetriever {
        &self.retriever
    }

    /// Stores and indexes a memory; its id and the ids archived to make room.
    pub fn add_memory(&mut self, m: &NewMemory) -> Result<(u64, Vec<u64>), MemoryError> {
        let id = self.db.add_memory(m)?;
        self.retriever.add(&[(id, m.content.as_str())])?;
        let evicted = self.db.evict_over(self.max)?;
        if !evicted.is_empty() {
            self.retriever.remove(&evicted)?;
        }
        Ok((id, evicted))
    }

    /// Stores and indexes many memories at once (an import); their ids and
    /// the ids archived.
    pub fn import(&mut self, ms: &[NewMemory]) -> Result<(Vec<u64>, Vec<u64>), MemoryError> {
        let ids = self.db.add_memories(ms)?;
        let docs: Vec<(u64, &str)> = ids
            .iter()
            .zip(ms)
            .map(|(id, m)| (*id, m.content.as_str()))
            .collect();
        self.retriever.add(&docs)?;
        let evicted = self.db.evict_over(self.max)?;
        if !evicted.is_empty() {
            self.retriever.remove(&evicted)?;
        }
        Ok((ids, evicted))
    }

    /// The `k` memories most relevant to `query`.
    pub fn retrieve(
        &self,
        query: &str,
        k: usize,
        mode: Mode,
    ) -> Result<Vec<Retrieved>, MemoryError> {
        let hits = self.retriever.search(query, k, mode)?;
        let mut out = Vec::with_capacity(hits.len());
        for hit in hits {
            if let Some(memory) = self.db.memory(hit.id)? {
                out.push(Retrieved { hit, memory });
            }
        }
        Ok(out)
    }

    /// Counts and sizes.
    pub fn stats(&self) -> Result<LongStats, MemoryError> {
        Ok(LongStats {
            db: self.db.stats()?,
            bm25_docs: self.retriever.len(),
            vectors: self.retriever.vectors(),
            dense_unavailable: self.retriever.dense_unavailable().map(str::to_string),
            dir: self.dir.clone(),
            max_memories: self.max,
        })
    }
}
