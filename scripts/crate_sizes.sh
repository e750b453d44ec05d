#!/usr/bin/env bash
# The workspace's size per crate, for docs/BENCHMARKS.md ("The house"):
# lines of Rust (every line of every .rs file, tests beside the code
# included) and `pub` item declarations (a line starting with `pub fn`,
# `pub struct`, `pub enum`, `pub trait`, `pub type`, `pub const`,
# `pub static`, `pub mod` or `pub use`, indented or not).
#
#   scripts/crate_sizes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
pub='^\s*pub (async fn|fn|struct|enum|trait|type|const|static|mod|use) '
total_lines=0
total_pub=0
printf '%-12s %8s %6s\n' folder lines pub
for dir in src-* tests; do
  [ -d "$dir" ] || continue
  files="$(git ls-files -- "$dir" | grep '\.rs$' || true)"
  [ -n "$files" ] || continue
  lines=$(cat $files | wc -l)
  pubs=$( (grep -hE "$pub" $files || true) | wc -l)
  printf '%-12s %8d %6d\n' "$dir" "$lines" "$pubs"
  total_lines=$((total_lines + lines))
  total_pub=$((total_pub + pubs))
done
printf '%-12s %8d %6d\n' total "$total_lines" "$total_pub"
