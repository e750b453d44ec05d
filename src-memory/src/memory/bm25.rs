//! BM25 over [`tokenize::terms`](super::tokenize::terms) with tantivy: one
//! document per memory (`id` as a fast field, `text` indexed with term
//! frequencies). On disk in its own folder, or in RAM for a throwaway run
//! (`memory eval`). Queries are built from the same terms (a disjunction of
//! term queries), so no query syntax can fail.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::MemoryError;
use super::tokenize::{JiebaTokenizer, TOKENIZER, terms};

/// Writer heap (tantivy's minimum is 15 MB per thread).
const WRITER_HEAP: usize = 32_000_000;

/// The BM25 index.
pub struct Bm25Index {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: IndexWriter,
    id: Field,
    text: Field,
    dirty: bool,
}

fn schema() -> (Schema, Field, Field) {
    let mut b = Schema::builder();
    let id = b.add_u64_field("id", INDEXED | FAST);
    let text = b.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        ),
    );
    (b.build(), id, text)
}

impl Bm25Index {
    /// Opens the index in `dir`, or creates an empty one there.
    pub fn open_or_create(dir: &Path) -> Result<Self, MemoryError> {
        let err = |e: &dyn std::fmt::Display| MemoryError::Index {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        let (schema, _, _) = schema();
        let exists = dir.join("meta.json").exists();
        let index = if exists {
            Index::open_in_dir(dir).map_err(|e| err(&e))?
        } else {
            Index::create_in_dir(dir, schema.clone()).map_err(|e| err(&e))?
        };
        if index.schema() != schema {
            return Err(err(&"the index was written with another schema"));
        }
        Self::wrap(dir, index)
    }

    /// An index in RAM (nothing on disk).
    pub fn in_memory() -> Result<Self, MemoryError> {
        let (schema, _, _) = schema();
        Self::wrap(Path::new("(in memory)"), Index::create_in_ram(schema))
    }

    fn wrap(path: &Path, index: Index) -> Result<Self, MemoryError> {
        let err = |e: &dyn std::fmt::Display| MemoryError::Index {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        index
            .tokenizers()
            .register(TOKENIZER, TextAnalyzer::from(JiebaTokenizer));
        let (_, id, text) = schema();
        let writer = index
            .writer_with_num_threads(1, WRITER_HEAP)
            .map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => MemoryError::Busy {
                    path: path.to_path_buf(),
                },
                e => err(&e),
            })?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e: tantivy::TantivyError| err(&e))?;
        Ok(Self {
            path: path.to_path_buf(),
            index,
            reader,
            writer,
            id,
            text,
            dirty: false,
        })
    }

    fn err(&self, e: &dyn std::fmt::Display) -> MemoryError {
        MemoryError::Index {
            path: self.path.clone(),
            detail: e.to_string(),
        }
    }

    /// Adds a document (visible after [`Bm25Index::commit`]).
    pub fn add(&mut self, id: u64, text: &str) -> Result<(), MemoryError> {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.id, id);
        doc.add_text(self.text, text);
        self.writer.add_document(doc).map_err(|e| self.err(&e))?;
        self.dirty = true;
        Ok(())
    }

    /// Removes a document (visible after [`Bm25Index::commit`]).
    pub fn remove(&mut self, id: u64) {
        self.writer.delete_term(Term::from_field_u64(self.id, id));
        self.dirty = true;
    }

    /// Removes every document.
    pub fn clear(&mut self) -> Result<(), MemoryError> {
        self.writer
            .delete_all_documents()
            .map_err(|e| self.err(&e))?;
        self.dirty = true;
        Ok(())
    }

    /// Makes the changes durable and searchable.
    pub fn commit(&mut self) -> Result<(), MemoryError> {
        if !self.dirty {
            return Ok(());
        }
        self.writer.commit().map_err(|e| self.err(&e))?;
        self.reader.reload().map_err(|e| self.err(&e))?;
        self.dirty = false;
        Ok(())
    }

    /// Documents searchable now.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Whether no document is searchable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of every searchable document.
    pub fn ids(&self) -> Result<BTreeSet<u64>, MemoryError> {
        let searcher = self.reader.searcher();
        let mut ids = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64("id").map_err(|e| self.err(&e))?;
            for doc in segment.doc_ids_alive() {
                if let Some(id) = column.first(doc) {
                    ids.insert(id);
                }
            }
        }
        Ok(ids)
    }

    /// The `n` best documents for `query` with their BM25 scores, best first.
    pub fn search(&self, query: &str, n: usize) -> Result<Vec<(u64, f32)>, MemoryError> {
        let unique: BTreeSet<String> = terms(query).into_iter().map(|t| t.text).collect();
        if unique.is_empty() || n == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = unique
            .into_iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.text, &t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &TopDocs::with_limit(n).order_by_score())
            .map_err(|e| self.err(&e))?;
        let mut out = Vec::with_capacity(top.len());
        let mut columns = std::collections::HashMap::new();
        for (score, addr) in top {
            let column = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => v.insert(
                    searcher
                        .segment_reader(addr.segment_ord)
                        .fast_fields()
                        .u64("id")
                        .map_err(|e| self.err(&e))?,
                ),
            };
            if let Some(id) = column.first(addr.doc_id) {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    /// The index's folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tantivy index (for its size on disk).
    pub fn index(&self) -> &Index {
        &self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_bm25_finds_chinese_and_english_and_survives_reopen() {
        let dir = std::env::temp_dir().join(format!("rb-bm25-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let mut ix = Bm25Index::open_or_create(&dir).unwrap();
            ix.add(1, "我们把厨房的灯关掉了").unwrap();
            ix.add(2, "The operator likes the living room at 22 degrees")
                .unwrap();
            ix.add(3, "卧室的窗帘每天早上七点打开").unwrap();
            ix.commit().unwrap();
            let hits = ix.search("厨房灯", 5).unwrap();
            assert_eq!(hits.first().map(|h| h.0), Some(1), "{hits:?}");
            let hits = ix.search("living-room degrees?", 5).unwrap();
            assert_eq!(hits.first().map(|h| h.0), Some(2), "{hits:?}");
            ix.remove(1);
            ix.commit().unwrap();
            assert!(ix.search("厨房", 5).unwrap().is_empty());
        }
        let ix = Bm25Index::open_or_create(&dir).unwrap();
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.ids().unwrap().into_iter().collect::<Vec<_>>(), [2, 3]);
        assert!(ix.search("\"(*", 5).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
