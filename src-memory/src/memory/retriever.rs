//! BM25 and dense retrieval behind one `search` (seed 004's HybridRetriever).
//!
//! On disk (`<dir>/bm25/`, `<dir>/vectors.bin`) beside the memory database,
//! or in RAM for a throwaway run. Opening checks both against the
//! database's live memories: an unreadable index or vector file is rebuilt
//! from SQLite, a vector file that lacks some memories gets just those
//! embedded, and each repair is reported as a notice. Without the model it
//! is BM25 alone, said once in a notice; asking for dense then is an error
//! that says why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::bm25::Bm25Index;
use super::dense::{self, DenseIndex};
use super::embed::{DIM, Embedder};
use super::hybrid::{self, Scored};
use super::{MemoryError, Mode};

/// One retrieved memory and its scores.
pub type Hit = Scored;

/// Candidates taken from each side before fusing, at least.
const MIN_CANDIDATES: usize = 40;

/// BM25 + dense.
pub struct HybridRetriever {
    dir: Option<PathBuf>,
    bm25: Bm25Index,
    dense: Option<DenseIndex>,
    embedder: Option<Arc<Embedder>>,
    /// Why there is no dense side, when there is none.
    no_dense: Option<String>,
    alpha: f32,
}

impl HybridRetriever {
    /// A retriever in RAM; `embedder` is the model or why there is none.
    pub fn in_memory(
        embedder: Result<Arc<Embedder>, String>,
        alpha: f64,
    ) -> Result<Self, MemoryError> {
        let (embedder, no_dense) = split(embedder);
        let dense = embedder
            .as_ref()
            .map(|e| DenseIndex::new(DIM, e.fingerprint()));
        Ok(Self {
            dir: None,
            bm25: Bm25Index::in_memory()?,
            dense,
            embedder,
            no_dense,
            alpha: alpha as f32,
        })
    }

    /// Opens the indexes in `dir` and makes them hold exactly `live` (the
    /// database's searchable memories: id, text). Returns the notices of
    /// what had to be repaired.
    pub fn open(
        dir: &Path,
        embedder: Result<Arc<Embedder>, String>,
        alpha: f64,
        live: &[(u64, String)],
    ) -> Result<(Self, Vec<String>), MemoryError> {
        let mut notices = Vec::new();
        let bm25_dir = dir.join("bm25");
        let want: BTreeSet<u64> = live.iter().map(|d| d.0).collect();
        let bm25 = match Bm25Index::open_or_create(&bm25_dir) {
            Ok(ix) => match ix.ids() {
                Ok(ids) if ids == want => Some(ix),
                Ok(ids) => {
                    notices.push(format!(
                        "BM25 index {} holds {} memories, the database {}: rebuilt from the database",
                        bm25_dir.display(),
                        ids.len(),
                        want.len()
                    ));
                    drop(ix);
                    None
                }
                Err(e) => {
                    notices.push(format!("{e}: rebuilt from the database"));
                    None
                }
            },
            Err(e @ MemoryError::Busy { .. }) => return Err(e),
            Err(e) => {
                notices.push(format!("{e}: rebuilt from the database"));
                None
            }
        };
        let bm25 = if let Some(ix) = bm25 {
            ix
        } else {
            let _ = std::fs::remove_dir_all(&bm25_dir);
            let mut ix = Bm25Index::open_or_create(&bm25_dir)?;
            for (id, text) in live {
                ix.add(*id, text)?;
            }
            ix.commit()?;
            ix
        };
        let (embedder, no_dense) = split(embedder);
        let mut this = Self {
            dir: Some(dir.to_path_buf()),
            bm25,
            dense: None,
            embedder,
            no_dense,
            alpha: alpha as f32,
        };
        if let Some(reason) = &this.no_dense {
            notices.push(format!("BM25 alone: {reason}"));
        }
        if let Some(e) = this.embedder.clone() {
            let file = dense::file_in(dir);
            let (mut ix, rewrite) = match DenseIndex::load(&file, DIM, e.fingerprint()) {
                Ok(ix) => (ix, false),
                Err(why) => {
                    if file.exists() || !live.is_empty() {
                        notices.push(format!(
                            "{}: {why}: vectors rebuilt from the database",
                            file.display()
                        ));
                    }
                    (DenseIndex::new(DIM, e.fingerprint()), true)
                }
            };
            let extra: Vec<u64> = ix
                .ids()
                .iter()
                .copied()
                .filter(|id| !want.contains(id))
                .collect();
            for id in &extra {
                ix.remove(*id);
            }
            let missing: Vec<&(u64, String)> = live.iter().filter(|d| !ix.contains(d.0)).collect();
            if !missing.is_empty() && !rewrite {
                notices.push(format!(
                    "{}: {} memories had no vector: embedded them",
                    file.display(),
                    missing.len()
                ));
            }
            let texts: Vec<&str> = missing.iter().map(|d| d.1.as_str()).collect();
            for (d, v) in missing.iter().zip(e.embed(&texts)?) {
                ix.insert(d.0, &v);
            }
            if rewrite || !extra.is_empty() || !missing.is_empty() {
                ix.save(&file)?;
            }
            this.dense = Some(ix);
        }
        Ok((this, notices))
    }

    /// Why dense retrieval is unavailable, if it is.
    pub fn dense_unavailable(&self) -> Option<&str> {
        self.no_dense.as_deref()
    }

    /// Memories searchable by BM25.
    pub fn len(&self) -> u64 {
        self.bm25.len()
    }

    /// Whether nothing is searchable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Vectors held (0 without the model).
    pub fn vectors(&self) -> usize {
        self.dense.as_ref().map_or(0, DenseIndex::len)
    }

    /// Indexes `docs` (id, text): BM25 at once, vectors in batches; both
    /// persisted when on disk.
    pub fn add(&mut self, docs: &[(u64, &str)]) -> Result<(), MemoryError> {
        let vectors = match &self.embedder {
            Some(e) => e.embed(&docs.iter().map(|d| d.1).collect::<Vec<_>>())?,
            None => Vec::new(),
        };
        self.add_embedded(docs, &vectors)
    }

    /// [`HybridRetriever::add`] with the vectors already computed (one per
    /// doc, in order; ignored without the model).
    pub fn add_embedded(
        &mut self,
        docs: &[(u64, &str)],
        vectors: &[Vec<f32>],
    ) -> Result<(), MemoryError> {
        for (id, text) in docs {
            self.bm25.add(*id, text)?;
        }
        self.bm25.commit()?;
        if let Some(ix) = &mut self.dense {
            for ((id, _), v) in docs.iter().zip(vectors) {
                ix.insert(*id, v);
            }
            if let Some(dir) = &self.dir {
                let ids: Vec<u64> = docs.iter().map(|d| d.0).collect();
                ix.append(&dense::file_in(dir), &ids)?;
            }
        }
        Ok(())
    }

    /// Drops `ids` from both indexes.
    pub fn remove(&mut self, ids: &[u64]) -> Result<(), MemoryError> {
        for id in ids {
            self.bm25.remove(*id);
        }
        self.bm25.commit()?;
        if let Some(ix) = &mut self.dense {
            let mut changed = false;
            for id in ids {
                changed |= ix.remove(*id);
            }
            if changed && let Some(dir) = &self.dir {
                ix.save(&dense::file_in(dir))?;
            }
        }
        Ok(())
    }

    /// Embeds a query (for callers that time the parts).
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>, MemoryError> {
        let e = self
            .embedder
            .as_ref()
            .ok_or_else(|| MemoryError::NoDense(self.no_dense.clone().unwrap_or_default()))?;
        Ok(e.embed(&[query])?.pop().unwrap_or_default())
    }

    /// The `k` best memories for `query` in `mode`. Hybrid without the
    /// model is BM25 alone (the open notice said so); dense without it is an error.
    pub fn search(&self, query: &str, k: usize, mode: Mode) -> Result<Vec<Hit>, MemoryError> {
        let mode = match mode {
            Mode::Hybrid if self.dense.is_none() => Mode::Bm25,
            m => m,
        };
        let vector = match mode {
            Mode::Bm25 => None,
            _ => Some(self.embed_query(query)?),
        };
        self.search_with(query, vector.as_deref(), k, mode)
    }

    /// [`HybridRetriever::search`] with the query already embedded.
    pub fn search_with(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        k: usize,
        mode: Mode,
    ) -> Result<Vec<Hit>, MemoryError> {
        let no_dense = || MemoryError::NoDense(self.no_dense.clone().unwrap_or_default());
        match mode {
            Mode::Bm25 => Ok(hybrid::bm25_only(&self.bm25.search(query, k)?, k)),
            Mode::Dense => {
                let ix = self.dense.as_ref().ok_or_else(no_dense)?;
                let v = vector.ok_or_else(no_dense)?;
                Ok(hybrid::dense_only(&ix.search(v, k), k))
            }
            Mode::Hybrid => {
                let n = (k * 4).max(MIN_CANDIDATES);
                let b = self.bm25.search(query, n)?;
                let (Some(ix), Some(v)) = (&self.dense, vector) else {
                    return Ok(hybrid::bm25_only(&b, k));
                };
                let mut cos = ix.search(v, n);
                for (id, _) in &b {
                    if !cos.iter().any(|c| c.0 == *id)
                        && let Some(c) = ix.score(v, *id)
                    {
                        cos.push((*id, c));
                    }
                }
                Ok(hybrid::fuse(&b, &cos, self.alpha, k))
            }
        }
    }
}

fn split(e: Result<Arc<Embedder>, String>) -> (Option<Arc<Embedder>>, Option<String>) {
    match e {
        Ok(e) => (Some(e), None),
        Err(why) => (None, Some(why)),
    }
}
