#!/usr/bin/env bash
# The benchmarks behind docs/BENCHMARKS.md. Run through `./x bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

echo "== criterion: ReAct iteration and engine tick"
cargo bench -q -p robobrain-core --bench react -- --warm-up-time 2 --measurement-time 5

echo "== whole-run: sim speed and E-stop latency"
cargo bench -q -p robobrain-core --bench latency

echo "== whole-run: the E-stop over TCP to the robot process (store attached, store failed, headless stdin)"
cargo bench -q -p robobrain-tui --bench estop

echo "== whole-run: the home's three-track path (first template vs a model summary at 800 ms)"
cargo bench -q -p robobrain-core --bench home
echo "== intents: utterance → intent with slots (Home Assistant's grammar, 100 devices / 20 areas / 3 floors) beside hassil"
cargo bench -q -p robobrain-core --bench intents
echo "== memory: retrieval at 10k/100k beside rank_bm25, quality on the eval set"
scripts/bench_memory.sh

echo "== whole-run: robobrain demo (release)"
cargo build -q --release --bin robobrain
/usr/bin/time -f "demo --fast: %e s wall, peak RSS %M KiB" "$target/release/robobrain" demo --fast >/dev/null
/usr/bin/time -f "demo (paced, as the README runs it): %e s wall, peak RSS %M KiB" "$target/release/robobrain" demo >/dev/null

echo "== whole-run: the web console under load (kernel tick with 0, 1, 20 viewers)"
cargo bench -q -p robobrain-tui --bench web

echo "== the page in Chromium: load → first snapshot, event → DOM"
ROBOBRAIN_BIN="$target/release/robobrain" node ui/tests/bench.mjs
