#!/usr/bin/env bash
# Memory retrieval at 10k and 100k memories beside Python's rank_bm25, and quality
# on the eval set (docs/BENCHMARKS.md "Memory"). Needs `./x setup` (the model and
# rank_bm25 in ~/.cache/robobrain/py).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
py="${ROBOBRAIN_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/robobrain/py/bin/python}"
dump="$(mktemp -d)"
trap 'rm -rf "$dump"' EXIT
ROBOBRAIN_BENCH_DUMP="$dump" cargo bench -q -p robobrain-core --bench memory
for f in "$dump"/rust-*.json; do
  n="${f##*/rust-}"; n="${n%.json}"
  "$py" scripts/bench_rank_bm25.py "$dump" "$n"
done
cargo build -q --release --bin robobrain
for mode in bm25 dense hybrid; do
  printf '%s: ' "$mode"
  report="$("$target/release/robobrain" memory eval --corpus tests/fixtures/memory/corpus.jsonl \
    --queries tests/fixtures/memory/queries.jsonl --mode "$mode")"
  tr -d '\n ' <<<"$report"; echo
  python3 scripts/bench_figures.py eval "$mode" <<<"$report"
done
