#!/usr/bin/env bash
# Every benchmark behind docs/BENCHMARKS.md and docs/benchmarks/*.md, and the
# peers (LangGraph, rank_bm25) in the same run. Run through `./x bench`:
#
#   ./x bench                 every group
#   ./x bench durable memory  only these groups (the others keep their last figures)
#   ./x bench --list          the groups
#
# Each group's benches record their figures (src-core/benches/figures.rs,
# scripts/bench_figures.py); scripts/bench_results.py collects them with the
# commit, the date, the machine and the load average before and after each
# group into target/bench/results.json, and prints the peers' ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
py="${ROBOBRAIN_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/robobrain/py/bin/python}"
bin="$target/release/robobrain"
out="$target/bench"
# The assist dataset, read in place (BENCHMARKS.md "assist-mini"), and any
# other dataset folder given with `--data DIR` (robobrain and hassil on each).
assist_data="${ROBOBRAIN_ASSIST_DATASET:-tests/data/home-assistant-datasets/assist-mini}"
assist_more=()
# How many runs the operator's-channel figures take (each test once per run).
channel_runs="${ROBOBRAIN_BENCH_CHANNEL_RUNS:-15}"

ALL_GROUPS=(react durable latency estop home intents llm console web memory demo assist channel mcap ros2 fleet)

describe() {
  case "$1" in
    react) echo "criterion: ReAct iteration, engine tick, watch; LangGraph without a checkpointer" ;;
    durable) echo "criterion: durable iteration; checkpoint bytes; resume; LangGraph with InMemorySaver and SqliteSaver" ;;
    latency) echo "whole-run: sim speed, E-stop latency, patrol drift, watch percentiles" ;;
    estop) echo "whole-run: the E-stop over TCP to the robot process (store attached, store failed, headless stdin)" ;;
    home) echo "whole-run: the home's three-track path (first template vs a model summary at 800 ms)" ;;
    intents) echo "criterion-free: utterance → intent with slots (Home Assistant's grammar, 100 devices / 20 areas / 3 floors) beside hassil" ;;
    llm) echo "whole-run: the model brain's overhead and token latency against mock-llm; decisions against llama.cpp's server (SmolLM2-135M) beside mock-llm" ;;
    console) echo "whole-run: console frames and updates" ;;
    web) echo "whole-run: kernel tick with 0/1/20 WebSocket viewers; /metrics scraped at ~240 events/s; the page in Chromium" ;;
    memory) echo "memory retrieval at 10k/100k beside rank_bm25; quality on the eval set" ;;
    demo) echo "robobrain demo: wall time and peak RSS" ;;
    assist) echo "assist-mini (and each --data DIR): robobrain's pass counts beside hassil's on the same sentences and homes" ;;
    channel) echo "the operator's channel: an E-stop behind a maximal input (tests, $channel_runs runs, debug)" ;;
    mcap) echo "whole-run: a lockstep tick plus its logs, JSONL alone vs JSONL and MCAP (--mcap), same process" ;;
    ros2) echo "the ROS 2 link against the Cyclone DDS fake Nav2: dispatch, feedback, E-stop → zero Twist" ;;
    fleet) echo "whole-run: fleet up for 10/20/30 robots; 100 patrolling robots on one mosquitto: event → console, CPU, RSS, tick p99 against silent brains" ;;
  esac
}

figure() { python3 scripts/bench_figures.py record "$@"; }

release_bin() { cargo build -q --release --locked --bin robobrain; }

run_react() {
  cargo bench -q --locked -p robobrain-core --bench react -- --warm-up-time 2 --measurement-time 5
  "$py" scripts/bench_langgraph.py --modes none
}

run_durable() {
  cargo bench -q --locked -p robobrain-core --bench durable -- --warm-up-time 2 --measurement-time 5
  "$py" scripts/bench_langgraph.py --modes memory,sqlite_node,sqlite_tick
}

run_latency() { cargo bench -q --locked -p robobrain-core --bench latency; }
run_estop() { cargo bench -q --locked -p robobrain-tui --bench estop; }
run_home() { cargo bench -q --locked -p robobrain-core --bench home; }
run_intents() { cargo bench -q --locked -p robobrain-core --bench intents; }
run_llm() { ROBOBRAIN_PYTHON="$py" cargo bench -q --locked -p robobrain-core --bench llm; }
run_mcap() { cargo bench -q --locked -p robobrain-core --bench mcap; }
# The dev profile, as `./x test` builds the ros2 feature (docs/ros2.md).
run_ros2() { ROBOBRAIN_PYTHON="$py" cargo bench -q --locked -p robobrain-core --features ros2 --bench ros2 --profile dev; }

run_fleet() {
  release_bin
  # The harness only connects and stamps: built as ./x test builds (dev, every feature).
  ROBOBRAIN_BIN="$(cd "$(dirname "$bin")" && pwd)/robobrain" \
    cargo bench -q --locked --workspace --all-features --profile dev --bench fleet
}

run_console() { cargo bench -q --locked -p robobrain-tui --bench console; }

run_web() {
  cargo bench -q --locked -p robobrain-tui --bench web
  release_bin
  local page
  page="$(ROBOBRAIN_BIN="$bin" node ui/tests/bench.mjs)"
  echo "$page"
  python3 scripts/bench_figures.py page <<<"$page"
}

run_memory() {
  # The 100k set is 10k embedded memories plus 90k perturbed copies of their
  # vectors (docs/benchmarks/memory.md); unset to embed every memory (~15 min).
  ROBOBRAIN_BENCH_EMBED_MAX="${ROBOBRAIN_BENCH_EMBED_MAX:-10000}" ROBOBRAIN_PYTHON="$py" scripts/bench_memory.sh
}

run_demo() {
  release_bin
  local t
  for mode in fast paced; do
    local args=(demo)
    [ "$mode" = fast ] && args+=(--fast)
    t="$( { /usr/bin/time -f "%e %M" "$bin" "${args[@]}" >/dev/null; } 2>&1 | tail -1)"
    read -r wall rss <<<"$t"
    echo "demo ($mode): $wall s wall, peak RSS $rss KiB"
    figure "demo.$mode.wall" "robobrain demo ($mode) wall time" "$wall" s
    figure "demo.$mode.rss" "robobrain demo ($mode) peak RSS" "$(awk "BEGIN { printf \"%.1f\", $rss / 1024 }")" MiB
  done
}

run_assist() {
  if [ ! -d "$assist_data" ]; then
    echo "assist: $assist_data is absent (set ROBOBRAIN_ASSIST_DATASET to the assist-mini folder)" >&2
    return 1
  fi
  if ! "$py" -c "import hassil, home_assistant_intents" 2>/dev/null; then
    echo "assist: hassil is missing in $py: run ./x setup (it installs hassil and home-assistant-intents)" >&2
    return 1
  fi
  release_bin
  local data label report peer
  for data in "$assist_data" "${assist_more[@]}"; do
    if [ "$data" = "$assist_data" ]; then label=assist-mini; else label="$(basename "$data")"; fi
    report="$("$bin" assist --dataset "$data" --json)"
    peer="$("$py" scripts/assist_hassil.py "$data")"
    python3 scripts/bench_figures.py assist "$label" <<<"$report"
    python3 scripts/bench_figures.py assist_peer "$label" <<<"$peer"
    python3 -c 'import json, sys; o = json.loads(sys.argv[2])["overall"]; p = json.loads(sys.argv[3])["overall"]
print("%s: robobrain %s/%s passed (%s confirmations), hassil %s/%s" % (sys.argv[1], o["passed"], o["total"], o["confirmations"], p["passed"], p["total"]))' \
      "$label" "$report" "$peer"
  done
}

# Each test prints its timing; it runs $channel_runs times and the bench takes p50/p99/max.
channel_test() {
  local id="$1" name="$2" pattern="$3" package="$4" filter="$5" log
  log="$(mktemp)"
  for _ in $(seq "$channel_runs"); do
    cargo nextest run -p "$package" --all-features --locked --no-capture -E "test($filter)" 2>&1 | grep -E "$pattern" >>"$log" || true
  done
  cat "$log"
  python3 scripts/bench_figures.py lines "$id" "$name" "$pattern" ms <"$log"
  rm -f "$log"
}

run_channel() {
  channel_test channel.in_process "in process: E-stop behind a full queue of maximal utterances → mode SAFE" \
    'E-stop behind [0-9]+ maximal utterances: ([0-9.]+)(µs|ms|s) ' robobrain-core an_estop_overtakes_a_full_queue
  channel_test channel.headless "headless: E-stop behind a 10 MiB line and 300 maximal utterances → mode SAFE" \
    'utterances: ([0-9.]+) ms from its line' robobrain-tui an_estop_overtakes_a_maximal_input
  channel_test channel.serve "serve: E-stop behind a 10 MiB WebSocket frame → mode SAFE" \
    'over the WebSocket: ([0-9.]+) ms from its frame' robobrain-tui an_oversized_frame_is_refused
}

load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' ','; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

selected=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a="${args[i]}"
  case "$a" in
    --data)
      i=$((i + 1))
      [ -d "${args[i]:-}" ] || { echo "--data wants a dataset folder, got '${args[i]:-}'" >&2; exit 2; }
      assist_more+=("${args[i]}")
      ;;
    --list)
      for g in "${ALL_GROUPS[@]}"; do printf '%-9s %s\n' "$g" "$(describe "$g")"; done
      exit 0
      ;;
    *)
      if [ -z "$(describe "$a")" ]; then
        echo "no bench group '$a'; the groups: ${ALL_GROUPS[*]}" >&2
        exit 2
      fi
      selected+=("$a")
      ;;
  esac
done
((${#selected[@]})) || selected=("${ALL_GROUPS[@]}")

rm -rf "$out/run"
mkdir -p "$out/run"
run="$(cd "$out/run" && pwd)"
export CRITERION_HOME
CRITERION_HOME="$(cd "$target" && pwd)/criterion"
failed=()
for g in "${selected[@]}"; do
  echo "== $g: $(describe "$g")"
  before="$(load)" started="$(now)" t0="$(date +%s.%N)"
  # A subshell of its own, not part of an || list, so that `set -e` holds in it.
  set +e
  (
    set -e
    export ROBOBRAIN_BENCH_FIGURES="$run/figures-$g.jsonl"
    "run_$g"
  )
  status=$?
  set -e
  ok=true
  if ((status)); then
    ok=false
    failed+=("$g")
  fi
  after="$(load)"
  printf '{"group":"%s","started":"%s","ended":"%s","load_before":[%s],"load_after":[%s],"seconds":%s,"ok":%s}\n' \
    "$g" "$started" "$(now)" "$before" "$after" "$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }")" "$ok" >>"$run/groups.jsonl"
  echo "   load average $before → $after"
done
python3 scripts/bench_results.py "$run" "$out/results.json"
if ((${#failed[@]})); then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
