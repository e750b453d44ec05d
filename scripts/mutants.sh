#!/usr/bin/env bash
# Mutation testing of the modules that decide safety (docs/testing.md):
# cargo-mutants changes one thing at a time in them (a condition negated, a
# function body replaced by a default, an operator swapped) and runs
# the tests of robobrain-core, -home and -kernel; a mutant no test notices is a gap. Run through
# `./x mutants [MODULE…]`; long (about 2 h on two cores: docs/testing.md), so not part of ./x test.
#
#   kernel     src-kernel/src/kernel/ (modes, arbitration, the task queue)
#   react      src-kernel/src/react/ (guardrails, loop guards, progress)
#   policy     src-home/src/policy.rs (what needs approval)
#   ledger     src-core/src/engine/durable.rs, src-store/src/store/ledger.rs
#              (the ledger around dispatch, resume and reconcile)
#
# One job at a time (the machine is shared), in a build folder of its own
# (ROBOBRAIN_MUTANTS_TARGET, default ~/.cache/robobrain/mutants-target) so the
# mutated builds never touch target/, without debug info (faster builds).
# The tests are those of robobrain-core, -home and -kernel, less the modules that cannot see a
# safety decision and are slow (memory, the model client, voice,
# perception). Reports land in target/mutants/MODULE/ (mutants.out:
# caught.txt, missed.txt, timeout.txt, unviable.txt). `--iterate` as the
# first argument re-tests only what the last run missed;
# ROBOBRAIN_MUTANTS_TREE=DIR mutates another checkout (an older commit, for
# the figures before tests were added) with the reports still here.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "${CARGO_TARGET_DIR:-target}/mutants" && cd "${CARGO_TARGET_DIR:-target}/mutants" && pwd)"
export CARGO_TARGET_DIR="${ROBOBRAIN_MUTANTS_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/robobrain/mutants-target}"
export CARGO_PROFILE_DEV_DEBUG=0
TESTS='(package(robobrain-core) | package(robobrain-home) | package(robobrain-kernel)) & not (test(/^memory::/) | test(/^llm::/) | test(/^voice::/) | test(/^perception::/))'
iterate=()
if [ "${1:-}" = --iterate ]; then
  iterate=(--iterate)
  shift
fi

# `--file F` for each file of a module.
files() {
  local f
  case "$1" in
    kernel) set -- src-kernel/src/kernel.rs src-kernel/src/kernel/*.rs ;;
    react) set -- src-kernel/src/react.rs src-kernel/src/react/*.rs ;;
    policy) set -- src-home/src/policy.rs ;;
    ledger) set -- src-core/src/engine/durable.rs src-store/src/store/ledger.rs ;;
    *) return ;;
  esac
  for f in "$@"; do printf -- '--file %s ' "$f"; done
}

modules=("$@")
((${#modules[@]})) || modules=(kernel react policy ledger)
summary=()
for m in "${modules[@]}"; do
  if [ -z "$(files "$m")" ]; then
    echo "no module '$m': kernel, react, policy, ledger" >&2
    exit 2
  fi
  mkdir -p "$out/$m"
  echo "== $m"
  # shellcheck disable=SC2046 # the globs expand to the module's files
  cargo mutants --dir "${ROBOBRAIN_MUTANTS_TREE:-.}" --jobs 1 --package robobrain-core --package robobrain-home --package robobrain-kernel \
    --test-workspace=true --all-features \
    --test-tool nextest --output "$out/$m" "${iterate[@]}" \
    $(files "$m") -- -E "$TESTS" || true
  r="$out/$m/mutants.out"
  count() { if [ -f "$r/$1.txt" ]; then grep -c . "$r/$1.txt" || true; else echo 0; fi; }
  caught=$(count caught) missed=$(count missed) timeout=$(count timeout) unviable=$(count unviable)
  viable=$((caught + missed + timeout))
  share=$(awk "BEGIN { printf \"%.1f\", $viable ? 100 * ($caught + $timeout) / $viable : 0 }")
  summary+=("$m: $((caught + timeout)) of $viable viable mutants caught ($share %; $timeout by a timeout), $missed missed, $unviable unviable")
  [ "$missed" = 0 ] || sed 's/^/   missed: /' "$r/missed.txt"
done
printf '%s\n' "${summary[@]}"
