#!/usr/bin/env python3
"""Python's rank_bm25 (BM25Okapi, the retriever seed 004 names) on the same corpus
and queries as `cargo bench --bench memory`, tokenised identically (the Rust
tokenizer's terms, dumped by the bench). Prints p50/p99 of top-10 queries and the
ratio to the Rust figures. Usage: bench_rank_bm25.py DUMP_DIR N"""
import json
import os
import sys
import time

from rank_bm25 import BM25Okapi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_figures  # noqa: E402

dump, n = sys.argv[1], sys.argv[2]
corpus = json.load(open(os.path.join(dump, f"corpus-{n}.json"), encoding="utf-8"))
queries = json.load(open(os.path.join(dump, "queries.json"), encoding="utf-8"))
rust = json.load(open(os.path.join(dump, f"rust-{n}.json")))
t = time.perf_counter()
bm25 = BM25Okapi(corpus)
build = time.perf_counter() - t
ids = list(range(len(corpus)))
for q in queries[:5]:
    bm25.get_top_n(q, ids, n=10)
lat = []
for q in queries:
    t = time.perf_counter()
    bm25.get_top_n(q, ids, n=10)
    lat.append((time.perf_counter() - t) * 1000)
lat.sort()
def pct(p):
    import math
    return lat[max(1, math.ceil(p / 100 * len(lat))) - 1]
p50, p99 = pct(50), pct(99)
size = f"{int(n) // 1000}k" if int(n) % 1000 == 0 else n
for stat, v in (("p50", p50), ("p99", p99)):
    bench_figures.record(f"memory.{size}.rank_bm25.{stat}", f"rank_bm25 BM25Okapi top 10, {n} memories, {stat}", v, "ms")
bench_figures.record(f"memory.{size}.rank_bm25.index_build", f"rank_bm25 index build, {n} memories", build, "s")
print(f"n={n}: rank_bm25 BM25Okapi top-10: p50 {p50:.3f} ms, p99 {p99:.3f} ms (index build {build:.2f} s)")
print(f"n={n}: rank_bm25 / robobrain BM25: p50 x{p50 / rust['bm25_p50']:.1f}, p99 x{p99 / rust['bm25_p99']:.1f}; "
      f"rank_bm25 / robobrain hybrid (end to end): p50 x{p50 / rust['hybrid_p50']:.1f}, p99 x{p99 / rust['hybrid_p99']:.1f}")
