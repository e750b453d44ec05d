//! Memory retrieval at scale (whole-run bench; docs/BENCHMARKS.md "Memory").
//!
//! `cargo bench -p robobrain-core --bench memory` (or `scripts/bench_memory.sh`,
//! which adds Python's rank_bm25 on the same corpus and queries):
//! synthetic bilingual memories (10k and 100k; `ROBOBRAIN_BENCH_MEMORY_SIZES`
//! overrides), embedded once with all-MiniLM-L6-v2 (throughput measured;
//! vectors cached under `~/.cache/robobrain/bench/`), indexed with tantivy,
//! then 300 queries: hybrid top-10 end to end (query embedding included),
//! the retrieval part alone, and BM25 alone — p50/p99 — plus index build
//! time and RSS. Writes the corpus and queries as term lists for
//! `scripts/bench_rank_bm25.py` when `ROBOBRAIN_BENCH_DUMP` names a folder.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::many_single_char_names,
    missing_docs
)]

mod figures;
mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use robobrain_core::memory::dense::DenseIndex;
use robobrain_core::memory::embed::{DIM, Embedder};
use robobrain_core::memory::eval::percentile;
use robobrain_core::memory::tokenize::terms;
use robobrain_core::memory::{HybridRetriever, Mode};

const PEOPLE: &[&str] = &[
    "Emma", "Tom", "Anna", "grandma", "Max", "Lily", "小明", "外婆", "爸爸", "妈妈",
];
const ROOMS_EN: &[&str] = &[
    "kitchen",
    "living room",
    "bedroom",
    "bathroom",
    "study",
    "balcony",
    "hallway",
    "garage",
    "nursery",
    "dining room",
];
const ROOMS_ZH: &[&str] = &[
    "厨房",
    "客厅",
    "卧室",
    "卫生间",
    "书房",
    "阳台",
    "走廊",
    "车库",
    "儿童房",
    "餐厅",
];
const THINGS_EN: &[&str] = &[
    "light",
    "lamp",
    "fan",
    "curtain",
    "speaker",
    "heater",
    "TV",
    "window",
    "plant",
    "vacuum",
    "kettle",
    "fridge",
    "door lock",
    "charger",
    "air purifier",
    "camera",
];
const THINGS_ZH: &[&str] = &[
    "灯",
    "台灯",
    "风扇",
    "窗帘",
    "音箱",
    "暖气",
    "电视",
    "窗户",
    "花",
    "扫地机",
    "水壶",
    "冰箱",
    "门锁",
    "充电座",
    "净化器",
    "摄像头",
];
const VERBS_EN: &[&str] = &[
    "turn on", "turn off", "check", "clean", "dim", "open", "close", "fix", "move", "water",
];
const VERBS_ZH: &[&str] = &[
    "打开", "关掉", "检查", "清洁", "调暗", "拉开", "关上", "修理", "移动", "浇水",
];
const TIMES_EN: &[&str] = &[
    "at 7 am",
    "at noon",
    "at 3 pm",
    "this evening",
    "at 9 pm",
    "on Monday",
    "on Sunday",
    "every morning",
    "after dinner",
    "before bed",
];
const TIMES_ZH: &[&str] = &[
    "早上七点",
    "中午",
    "下午三点",
    "今晚",
    "晚上九点",
    "周一",
    "周日",
    "每天早上",
    "晚饭后",
    "睡觉前",
];

/// A tiny deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        xs[(self.0 % xs.len() as u64) as usize]
    }
}

fn memory(r: &mut Rng, i: usize) -> String {
    if i.is_multiple_of(2) {
        let (v, room, thing, t, p) = (
            r.pick(VERBS_EN),
            r.pick(ROOMS_EN),
            r.pick(THINGS_EN),
            r.pick(TIMES_EN),
            r.pick(PEOPLE),
        );
        format!(
            "operator: {p} asked to {v} the {room} {thing} {t} | robot: I will {v} the {room} {thing} {t} (note {i})"
        )
    } else {
        let (v, room, thing, t, p) = (
            r.pick(VERBS_ZH),
            r.pick(ROOMS_ZH),
            r.pick(THINGS_ZH),
            r.pick(TIMES_ZH),
            r.pick(PEOPLE),
        );
        format!(
            "主人：{p}说{t}把{room}的{thing}{v} | 机器人：好的，{t}{v}{room}的{thing}（记录{i}）"
        )
    }
}

fn query(r: &mut Rng, i: usize) -> String {
    if i.is_multiple_of(2) {
        format!(
            "when should the {} {} be {}",
            r.pick(ROOMS_EN),
            r.pick(THINGS_EN),
            r.pick(&["switched on", "cleaned", "checked", "opened", "watered"])
        )
    } else {
        format!(
            "{}的{}什么时候{}",
            r.pick(ROOMS_ZH),
            r.pick(THINGS_ZH),
            r.pick(VERBS_ZH)
        )
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// `10k` for 10 000: the size in figure ids.
fn size_id(n: usize) -> String {
    if n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// Records p50 and p99 of `xs` (milliseconds) as `memory.<n>.<what>.p50` / `.p99`.
fn record_ms(n: usize, what: &str, name: &str, xs: &[f64]) {
    for (stat, p) in [("p50", 50.0), ("p99", 99.0)] {
        figures::record(
            &format!("memory.{}.{what}.{stat}", size_id(n)),
            &format!("{name}, {n} memories, {stat}"),
            percentile(xs, p),
            "ms",
        );
    }
}

fn ms(xs: &[f64]) -> String {
    format!(
        "p50 {:.3} ms, p99 {:.3} ms",
        percentile(xs, 50.0),
        percentile(xs, 99.0)
    )
}

/// The dense pre-filter against brute force: recall@40 of the exact top 40
/// and the time of one dense search, at the default candidate width and a few others.
fn dense_recall(n: usize, vectors: &[Vec<f32>], embedder: &Embedder, queries: &[String]) {
    const K: usize = 40;
    let mut ix = DenseIndex::new(DIM, embedder.fingerprint());
    for (i, v) in vectors.iter().enumerate() {
        ix.insert(i as u64, v);
    }
    let qs: Vec<&str> = queries.iter().take(60).map(String::as_str).collect();
    let qv = embedder.embed(&qs).unwrap();
    let exact: Vec<Vec<(u64, f32)>> = qv.iter().map(|q| ix.search_exact(q, K)).collect();
    let mut times = Vec::new();
    for q in &qv {
        let t = Instant::now();
        ix.search_exact(q, K);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("n={n}: dense top-{K}, brute force: {}", ms(&times));
    record_ms(n, "dense_brute_force", "dense top 40, brute force", &times);
    let default = ix.search(&qv[0], K).len();
    assert_eq!(default, K);
    let widths = [
        256,
        512,
        robobrain_core::memory::dense::MIN_CANDIDATES
            .max(K * robobrain_core::memory::dense::CANDIDATES_PER_HIT),
        2048,
        4096,
    ];
    for c in widths {
        let (mut found, mut top10, mut gap, mut times) = (0usize, 0usize, 0.0f32, Vec::new());
        for (q, want) in qv.iter().zip(&exact) {
            let t = Instant::now();
            let got = ix.search_among(q, K, c);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            let has = |id: u64| got.iter().any(|h| h.0 == id);
            found += want.iter().filter(|h| has(h.0)).count();
            top10 += want[..10].iter().filter(|h| has(h.0)).count();
            // How far above the exact 40th cosine the worst miss was.
            for h in want.iter().filter(|h| !has(h.0)) {
                gap = gap.max(h.1 - want[K - 1].1);
            }
        }
        let recall = found as f64 / (K * qv.len()) as f64;
        let kept = top10 as f64 / (10 * qv.len()) as f64;
        println!(
            "n={n}: dense top-{K}, sign pre-filter -> {c} exact: recall@{K} {recall:.4}, exact top 10 kept {kept:.4}, worst miss {gap:.4} above the 40th cosine ({} queries); {}",
            qv.len(),
            ms(&times)
        );
        let what = format!("prefilter_{c}");
        let name = format!("dense top 40, sign pre-filter then {c} exact");
        record_ms(n, &what, &name, &times);
        let id = format!("memory.{}.{what}", size_id(n));
        figures::record(
            &format!("{id}.recall"),
            &format!("{name}: recall@40 against brute force, {n} memories"),
            recall,
            "",
        );
        figures::record(
            &format!("{id}.top10_kept"),
            &format!("{name}: share of the exact top 10 kept, {n} memories"),
            kept,
            "",
        );
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::var("ROBOBRAIN_BENCH_MEMORY_SIZES").map_or_else(
        |_| vec![10_000, 100_000],
        |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    );
    let model_dir = std::env::var(robobrain_core::memory::MODEL_ENV).map_or_else(
        |_| robobrain_core::memory::default_model_dir(),
        PathBuf::from,
    );
    let embedder = match Embedder::load(&model_dir) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            eprintln!("the embedding model is missing (./x setup installs it): {e}");
            std::process::exit(1);
        }
    };
    let cache = robobrain_core::memory::default_model_dir()
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("bench"))
        .unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    let dump = std::env::var("ROBOBRAIN_BENCH_DUMP")
        .ok()
        .map(PathBuf::from);
    let mut rq = Rng(0x5eed_0008);
    let queries: Vec<String> = (0..300).map(|i| query(&mut rq, i)).collect();
    for &n in &sizes {
        let mut r = Rng(0x5eed_1234);
        let docs: Vec<String> = (0..n).map(|i| memory(&mut r, i)).collect();
        // Vectors: cached by size (the generator is deterministic), else embedded and timed.
        // ROBOBRAIN_BENCH_EMBED_MAX = m: only the first m are embedded; the
        // rest reuse those vectors, perturbed and renormalised (said in the output).
        let m: usize = std::env::var("ROBOBRAIN_BENCH_EMBED_MAX")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(n)
            .min(n);
        let file = cache.join(format!("vectors-{n}-{m}.bin"));
        let vectors: Vec<Vec<f32>> = match DenseIndex::load(&file, DIM, embedder.fingerprint()) {
            Ok(ix) if ix.len() == n => {
                println!(
                    "n={n}: vectors loaded from {} ({m} embedded by an earlier run)",
                    file.display()
                );
                (0..n as u64)
                    .map(|id| ix.vector(id).unwrap().to_vec())
                    .collect()
            }
            _ => {
                let t = Instant::now();
                let texts: Vec<&str> = docs.iter().take(m).map(String::as_str).collect();
                let mut out = Vec::with_capacity(n);
                for chunk in texts.chunks(256) {
                    out.extend(embedder.embed(chunk).unwrap());
                }
                let s = t.elapsed().as_secs_f64();
                figures::record(
                    &format!("memory.{}.embedding_throughput", size_id(n)),
                    "embedding throughput, batches of 32",
                    m as f64 / s,
                    "sentences/s",
                );
                println!(
                    "n={n}: embedding {:.0} sentences/s ({m} in {s:.1} s, batches of 32, release)",
                    m as f64 / s
                );
                if m < n {
                    println!(
                        "n={n}: vectors {m}..{n} are copies of the first {m}, perturbed (±0.02) and renormalised"
                    );
                    let mut noise = Rng(0x5eed_9999);
                    for i in m..n {
                        let mut v = out[i % m].clone();
                        for x in &mut v {
                            let d: f32 = noise.pick(&["0", "1", "2", "3", "4"]).parse().unwrap();
                            *x += (d - 2.0) * 0.01;
                        }
                        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                        out.push(v.into_iter().map(|x| x / norm).collect());
                    }
                }
                let mut ix = DenseIndex::new(DIM, embedder.fingerprint());
                for (i, v) in out.iter().enumerate() {
                    ix.insert(i as u64, v);
                }
                ix.save(&file).unwrap();
                out
            }
        };
        dense_recall(n, &vectors, &embedder, &queries);
        let before = rss_kib();
        let mut hr = HybridRetriever::in_memory(Ok(Arc::clone(&embedder)), 0.5).unwrap();
        let t = Instant::now();
        let pairs: Vec<(u64, &str)> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (i as u64, d.as_str()))
            .collect();
        for (chunk, vs) in pairs.chunks(10_000).zip(vectors.chunks(10_000)) {
            hr.add_embedded(chunk, vs).unwrap();
        }
        let build = t.elapsed().as_secs_f64();
        drop(vectors);
        let rss = rss_kib();
        let id = format!("memory.{}", size_id(n));
        figures::record(
            &format!("{id}.index_build"),
            &format!("index build (BM25 + vectors already embedded), {n} memories"),
            build,
            "s",
        );
        figures::record(
            &format!("{id}.rss"),
            &format!("bench process RSS with {n} memories"),
            (rss / 1024) as f64,
            "MiB",
        );
        figures::record(
            &format!("{id}.retriever_rss"),
            &format!("the retriever's share of the RSS, {n} memories"),
            (rss.saturating_sub(before) / 1024) as f64,
            "MiB",
        );
        println!(
            "n={n}: index build (BM25 + loading vectors) {build:.2} s; RSS {} MiB (retriever ≈ {} MiB)",
            rss / 1024,
            rss.saturating_sub(before) / 1024
        );
        // Warm up.
        for q in queries.iter().take(20) {
            hr.search(q, 10, Mode::Hybrid).unwrap();
        }
        let (mut full, mut part, mut bm25, mut embed) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for q in &queries {
            let t = Instant::now();
            let hits = hr.search(q, 10, Mode::Hybrid).unwrap();
            full.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(hits.len(), 10);
            let t = Instant::now();
            let v = hr.embed_query(q).unwrap();
            embed.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            hr.search_with(q, Some(&v), 10, Mode::Hybrid).unwrap();
            part.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            hr.search(q, 10, Mode::Bm25).unwrap();
            bm25.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "n={n}: hybrid top-10, end to end (query embedded): {}",
            ms(&full)
        );
        println!(
            "n={n}: hybrid top-10, retrieval only (query vector given): {}",
            ms(&part)
        );
        println!("n={n}: query embedding alone: {}", ms(&embed));
        println!("n={n}: BM25 top-10 alone: {}", ms(&bm25));
        record_ms(
            n,
            "hybrid",
            "hybrid top 10, end to end (query embedded)",
            &full,
        );
        record_ms(
            n,
            "retrieval",
            "hybrid top 10, retrieval only (query vector given)",
            &part,
        );
        record_ms(n, "query_embedding", "query embedding alone", &embed);
        record_ms(n, "bm25", "BM25 top 10 alone", &bm25);
        if let Some(dir) = &dump {
            std::fs::create_dir_all(dir).unwrap();
            let toks = |s: &str| terms(s).into_iter().map(|t| t.text).collect::<Vec<_>>();
            let corpus: Vec<Vec<String>> = docs.iter().map(|d| toks(d)).collect();
            let qs: Vec<Vec<String>> = queries.iter().map(|q| toks(q)).collect();
            std::fs::write(
                dir.join(format!("corpus-{n}.json")),
                serde_json::to_string(&corpus).unwrap(),
            )
            .unwrap();
            std::fs::write(
                dir.join("queries.json"),
                serde_json::to_string(&qs).unwrap(),
            )
            .unwrap();
            std::fs::write(
                dir.join(format!("rust-{n}.json")),
                serde_json::json!({
                    "bm25_p50": percentile(&bm25, 50.0), "bm25_p99": percentile(&bm25, 99.0),
                    "hybrid_p50": percentile(&full, 50.0), "hybrid_p99": percentile(&full, 99.0),
                    "retrieval_p50": percentile(&part, 50.0), "retrieval_p99": percentile(&part, 99.0),
                })
                .to_string(),
            )
            .unwrap();
        }
    }
}
