#!/usr/bin/env bash
# Fuzzes the parsers and codecs that read untrusted input (docs/testing.md).
# Run through `./x fuzz [TARGET…]`: every target of fuzz/Cargo.toml for
# ROBOBRAIN_FUZZ_SECONDS (default 60) each, seeded from fuzz/corpus/TARGET
# and the shipped files fuzz/seeds.txt names. New inputs the fuzzer keeps go
# to target/fuzz/corpus/TARGET, not into the repository. An input that fails
# is copied to fuzz/regressions/TARGET/, where tests/fuzz_corpus.rs replays it
# in every `./x test` — commit it with the fix.
#
# cargo-fuzz wants nightly-only compiler flags: with a nightly toolchain
# installed it is used; otherwise the stable compiler is told to accept them
# (RUSTC_BOOTSTRAP=1). No sanitizer by default (the project forbids unsafe
# code, and an instrumented build of every dependency costs more than the
# fuzzing on two cores); ROBOBRAIN_FUZZ_SANITIZER=address turns ASan on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${ROBOBRAIN_FUZZ_SECONDS:-60}"
sanitizer="${ROBOBRAIN_FUZZ_SANITIZER:-none}"
work="$(mkdir -p "${CARGO_TARGET_DIR:-target}/fuzz" && cd "${CARGO_TARGET_DIR:-target}/fuzz" && pwd)"

mapfile -t all < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^robobrain-fuzz$')
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
build=(--sanitizer "$sanitizer" --target-dir "$work/build")

echo "== building the fuzz targets (${fuzz[*]}, sanitizer $sanitizer)"
"${fuzz[@]}" build "${build[@]}"

failed=()
for t in "${targets[@]}"; do
  # Absolute paths: cargo fuzz runs the target from fuzz/. A target whose
  # seeds are all shipped files has no folder under fuzz/corpus.
  seeds=()
  [ -d "fuzz/corpus/$t" ] && seeds+=("$PWD/fuzz/corpus/$t")
  read -r -a more <<<"$(sed -n "s/^$t //p" fuzz/seeds.txt | sed "s#\([^ ]*\)#$PWD/\1#g")"
  seeds+=("${more[@]}")
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  echo "== $t: ${seconds} s from ${seeds[*]}"
  if ! "${fuzz[@]}" run "${build[@]}" "$t" "$work/corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$seconds" -artifact_prefix="$work/artifacts/$t/" -print_final_stats=1 2>"$work/$t.log"; then
    failed+=("$t")
    if compgen -G "$work/artifacts/$t/*" >/dev/null; then
      mkdir -p "fuzz/regressions/$t"
      cp "$work/artifacts/$t"/* "fuzz/regressions/$t/"
      echo "   FAILED: the input is in fuzz/regressions/$t/ (log: $work/$t.log)"
    else
      echo "   FAILED to run (no input kept): see $work/$t.log"
    fi
  fi
  grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs|^#[0-9]+ +DONE' "$work/$t.log" | tail -2 | sed 's/^/   /'
done
if ((${#failed[@]})); then
  echo "${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "${#targets[@]} targets fuzzed for ${seconds} s each: no failures"
