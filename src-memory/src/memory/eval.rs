//! Retrieval evaluation: corpus and query files (JSONL) and the metrics
//! `robobrain memory eval` prints.
//!
//! Corpus lines are `{"id": …, "text": …}` (optional `"time"`); query lines
//! `{"id": …, "query": …, "relevant": [ids]}`; ids are strings or numbers.
//! A bad line is refused with its file and line and what was expected.
//!
//! Metrics, over all queries: `hit@5` and `hit@10` — the share of queries
//! with at least one relevant id in the top 5 / 10; `recall@10` — the share
//! of a query's relevant ids found in its top 10, averaged over queries
//! (`recall@10_micro`: found / relevant over all queries); `mrr` — the mean
//! of 1 / rank of the first relevant id within the top `k` (0 when none);
//! latency — per query, embedding the query included, p50 and p99 in ms.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use super::MemoryError;

/// One corpus entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Its id as written.
    pub id: String,
    /// The text.
    pub text: String,
    /// Its time, when given.
    pub time: Option<String>,
}

/// One query with its relevant ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Its id as written.
    pub id: String,
    /// The query text.
    pub query: String,
    /// Relevant corpus ids.
    pub relevant: Vec<String>,
}

/// Longest line accepted, in bytes.
const MAX_LINE: usize = 100_000;

fn lines(path: &Path) -> Result<Vec<(usize, Value)>, MemoryError> {
    let bytes = std::fs::read(path).map_err(|e| MemoryError::Io {
        path: path.to_path_buf(),
        detail: format!("cannot read it ({e})"),
    })?;
    let mut out = Vec::new();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = i + 1;
        let parse = |detail: String| MemoryError::Parse {
            path: path.to_path_buf(),
            line,
            detail,
        };
        let text = std::str::from_utf8(raw).map_err(|e| {
            parse(format!(
                "invalid UTF-8 at byte {} of the line: expected UTF-8 text",
                e.valid_up_to() + 1
            ))
        })?;
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if text.len() > MAX_LINE {
            return Err(parse(format!(
                "line of {} bytes is too long: expected at most {MAX_LINE}",
                text.len()
            )));
        }
        let v: Value = serde_json::from_str(text)
            .map_err(|e| parse(format!("expected one JSON object per line ({e})")))?;
        if !v.is_object() {
            return Err(parse("expected a JSON object".into()));
        }
        out.push((line, v));
    }
    Ok(out)
}

fn id_of(v: &Value, key: &str) -> Result<String, String> {
    match v.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(other) => Err(format!(
            "`{key}`: expected a non-empty string or a number, found {other}"
        )),
        None => Err(format!("missing `{key}`")),
    }
}

fn text_of(v: &Value, key: &str) -> Result<String, String> {
    match v.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(format!("`{key}` is empty: expected some text")),
        Some(other) => Err(format!("`{key}`: expected a string, found {other}")),
        None => Err(format!("missing `{key}`")),
    }
}

/// `items`, or an error saying the file has none and what a line looks like.
fn non_empty<T>(path: &Path, items: Vec<T>, example: &str) -> Result<Vec<T>, MemoryError> {
    if items.is_empty() {
        return Err(MemoryError::Parse {
            path: path.to_path_buf(),
            line: 1,
            detail: format!("no entries: expected lines like {example}"),
        });
    }
    Ok(items)
}

/// An error at `path:line` saying what was expected.
fn parse_error(path: &Path, line: usize) -> impl Fn(String) -> MemoryError + Copy + '_ {
    move |detail| MemoryError::Parse {
        path: path.to_path_buf(),
        line,
        detail,
    }
}

/// Reads a corpus file.
pub fn read_corpus(path: &Path) -> Result<Vec<Doc>, MemoryError> {
    let mut seen = HashMap::new();
    let mut docs = Vec::new();
    for (line, v) in lines(path)? {
        let at = parse_error(path, line);
        let id = id_of(&v, "id").map_err(at)?;
        let text = text_of(&v, "text").map_err(at)?;
        let time = match v.get("time") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(other) => {
                return Err(at(format!(
                    "`time`: expected a string or a number, found {other}"
                )));
            }
        };
        if let Some(first) = seen.insert(id.clone(), line) {
            return Err(at(format!("duplicate id {id:?} (first on line {first})")));
        }
        docs.push(Doc { id, text, time });
    }
    non_empty(path, docs, "{\"id\": \"m1\", \"text\": \"…\"}")
}

/// Reads a query file; every relevant id must be in `corpus`.
pub fn read_queries(path: &Path, corpus: &[Doc]) -> Result<Vec<Query>, MemoryError> {
    let known: std::collections::HashSet<&str> = corpus.iter().map(|d| d.id.as_str()).collect();
    let mut out = Vec::new();
    for (line, v) in lines(path)? {
        let at = parse_error(path, line);
        let id = id_of(&v, "id").map_err(at)?;
        let query = text_of(&v, "query").map_err(at)?;
        let relevant = match v.get("relevant") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(at(format!(
                        "`relevant`: expected ids (strings or numbers), found {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err(at(
                    "`relevant`: expected a non-empty array of corpus ids".into()
                ));
            }
            None => return Err(at("missing `relevant`".into())),
        };
        if let Some(unknown) = relevant.iter().find(|r| !known.contains(r.as_str())) {
            return Err(at(format!("relevant id {unknown:?} is not in the corpus")));
        }
        out.push(Query {
            id,
            query,
            relevant,
        });
    }
    non_empty(
        path,
        out,
        "{\"id\": \"q1\", \"query\": \"…\", \"relevant\": [\"m1\"]}",
    )
}

/// The metrics of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Retrieval mode.
    pub mode: String,
    /// Results per query for MRR.
    pub k: usize,
    /// Corpus size.
    pub corpus: usize,
    /// Query count.
    pub queries: usize,
    /// Share of queries with a relevant id in the top 5.
    #[serde(rename = "hit@5")]
    pub hit5: f64,
    /// Share of queries with a relevant id in the top 10.
    #[serde(rename = "hit@10")]
    pub hit10: f64,
    /// Share of relevant ids in the top 10, averaged over queries.
    #[serde(rename = "recall@10")]
    pub recall10: f64,
    /// Found / relevant over all queries.
    #[serde(rename = "recall@10_micro")]
    pub recall10_micro: f64,
    /// Mean reciprocal rank within the top k.
    pub mrr: f64,
    /// Query latency percentiles (ms).
    pub latency_ms: Latency,
    /// Seconds to index the corpus (embedding included).
    pub index_build_s: f64,
    /// BM25's weight (hybrid).
    pub alpha: f64,
}

/// Latency percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The `p`-th percentile (nearest rank) of `xs`.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// What one query returned (corpus ids, best first) and how long it took.
pub struct Ranked {
    /// The ids.
    pub ids: Vec<String>,
    /// Milliseconds.
    pub ms: f64,
}

/// The metrics of `ranked` (one per query, in order) against `queries`.
pub fn score(queries: &[Query], ranked: &[Ranked], k: usize) -> (f64, f64, f64, f64, f64, Latency) {
    let n = queries.len().max(1) as f64;
    let (mut h5, mut h10, mut rec, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    let (mut found_all, mut rel_all) = (0usize, 0usize);
    for (q, r) in queries.iter().zip(ranked) {
        let hit_in = |n: usize| r.ids.iter().take(n).any(|id| q.relevant.contains(id));
        h5 += f64::from(u8::from(hit_in(5)));
        h10 += f64::from(u8::from(hit_in(10)));
        let found = q
            .relevant
            .iter()
            .filter(|rel| r.ids.iter().take(10).any(|id| id == *rel))
            .count();
        rec += found as f64 / q.relevant.len() as f64;
        found_all += found;
        rel_all += q.relevant.len();
        if let Some(pos) = r.ids.iter().take(k).position(|id| q.relevant.contains(id)) {
            mrr += 1.0 / (pos + 1) as f64;
        }
    }
    let ms: Vec<f64> = ranked.iter().map(|r| r.ms).collect();
    (
        h5 / n,
        h10 / n,
        rec / n,
        found_all as f64 / rel_all.max(1) as f64,
        mrr / n,
        Latency {
            p50: percentile(&ms, 50.0),
            p99: percentile(&ms, 99.0),
        },
    )
}

/// Indexes `corpus` in RAM and runs `queries` in `mode`.
pub fn run(
    corpus: &[Doc],
    queries: &[Query],
    k: usize,
    mode: super::Mode,
    alpha: f64,
    embedder: Result<std::sync::Arc<super::embed::Embedder>, String>,
    progress: &dyn crate::progress::Progress,
) -> Result<Report, MemoryError> {
    if mode == super::Mode::Dense
        && let Err(why) = &embedder
    {
        return Err(MemoryError::NoDense(why.clone()));
    }
    let mut r = super::HybridRetriever::in_memory(embedder, alpha)?;
    let started = Instant::now();
    let docs: Vec<(u64, &str)> = corpus
        .iter()
        .enumerate()
        .map(|(i, d)| (i as u64, d.text.as_str()))
        .collect();
    let total = docs.len() as u64;
    progress.update("documents indexed", 0, total);
    let mut indexed = 0;
    for chunk in docs.chunks(512) {
        r.add(chunk)?;
        indexed += chunk.len() as u64;
        progress.update("documents indexed", indexed, total);
    }
    let index_build_s = started.elapsed().as_secs_f64();
    let want = k.max(10);
    let mut ranked = Vec::with_capacity(queries.len());
    for (i, q) in queries.iter().enumerate() {
        progress.update("queries", i as u64, queries.len() as u64);
        let t = Instant::now();
        let hits = r.search(&q.query, want, mode)?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        ranked.push(Ranked {
            ids: hits
                .iter()
                .filter_map(|h| corpus.get(h.id as usize).map(|d| d.id.clone()))
                .collect(),
            ms,
        });
    }
    let (hit5, hit10, recall10, recall10_micro, mrr, latency_ms) = score(queries, &ranked, k);
    Ok(Report {
        mode: mode.as_str().into(),
        k,
        corpus: corpus.len(),
        queries: queries.len(),
        hit5,
        hit10,
        recall10,
        recall10_micro,
        mrr,
        latency_ms,
        index_build_s,
        alpha,
    })
}

/// Where a relative fixture path points from the repository root.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// Counts ids by how many queries name them (for the eval set's own checks).
pub fn relevance_counts(queries: &[Query]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for q in queries {
        for r in &q.relevant {
            *m.entry(r.clone()).or_insert(0) += 1;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-eval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn memory_eval_files_are_refused_by_line() {
        let c = write(
            "c1.jsonl",
            b"{\"id\":\"a\",\"text\":\"x\"}\n\n{\"id\":\"b\",\"text\":\"\xff\"}\n",
        );
        let e = read_corpus(&c).unwrap_err().to_string();
        assert!(
            e.ends_with("c1.jsonl:3: invalid UTF-8 at byte 19 of the line: expected UTF-8 text"),
            "{e}"
        );
        let c = write(
            "c2.jsonl",
            b"{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n",
        );
        assert!(
            read_corpus(&c)
                .unwrap_err()
                .to_string()
                .contains("c2.jsonl:2: duplicate id \"a\" (first on line 1)")
        );
        let c = write("c3.jsonl", b"{\"id\":1,\"text\":\"x\"}\nnot json\n");
        assert!(
            read_corpus(&c)
                .unwrap_err()
                .to_string()
                .contains("c3.jsonl:2: expected one JSON object per line")
        );
        let c = write("c4.jsonl", b"{\"id\":1,\"text\":\"x\"}\n");
        let corpus = read_corpus(&c).unwrap();
        let q = write(
            "q1.jsonl",
            b"{\"id\":\"q\",\"query\":\"x\",\"relevant\":[\"2\"]}\n",
        );
        let e = read_queries(&q, &corpus).unwrap_err().to_string();
        assert!(
            e.contains("q1.jsonl:1: relevant id \"2\" is not in the corpus"),
            "{e}"
        );
        let q = write("q2.jsonl", b"{\"id\":\"q\",\"query\":\"x\"}\n");
        assert!(
            read_queries(&q, &corpus)
                .unwrap_err()
                .to_string()
                .contains("q2.jsonl:1: missing `relevant`")
        );
    }

    #[test]
    fn memory_eval_metrics_follow_their_definitions() {
        let q = |rel: &[&str]| Query {
            id: String::new(),
            query: String::new(),
            relevant: rel.iter().map(|s| (*s).to_string()).collect(),
        };
        let r = |ids: &[&str], ms: f64| Ranked {
            ids: ids.iter().map(|s| (*s).to_string()).collect(),
            ms,
        };
        let queries = [q(&["a", "b"]), q(&["z"])];
        let mut far = vec!["x"; 6];
        far.push("z");
        let ranked = [r(&["x", "a", "y"], 1.0), r(&far, 3.0)];
        let (h5, h10, rec, micro, mrr, lat) = score(&queries, &ranked, 10);
        assert_eq!((h5, h10), (0.5, 1.0));
        assert_eq!(rec, f64::midpoint(0.5, 1.0));
        assert_eq!(micro, 2.0 / 3.0);
        assert!((mrr - f64::midpoint(0.5, 1.0 / 7.0)).abs() < 1e-12);
        assert_eq!((lat.p50, lat.p99), (1.0, 3.0));
        assert_eq!(percentile(&[5.0, 1.0, 3.0, 2.0], 50.0), 2.0);
    }
}
