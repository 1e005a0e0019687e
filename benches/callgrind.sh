#!/usr/bin/env bash
# Instructions per operation of the hot paths, counted by valgrind's
# callgrind: repeatable on a noisy machine, unlike time. Prints a Markdown
# table. Usage: benches/callgrind.sh [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install -y valgrind" >&2; exit 1; }
cargo build --quiet --release -p tripwire-benches --example hot_path
bin=${CARGO_TARGET_DIR:-target}/release/examples/hot_path
count() { # instructions for n iterations of path $1
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$n" 2>&1 |
    awk '/Collected/ {print $4}'
}
# The loop and the guarded call alone, measured the same way, are taken off.
base=$(count bare)
echo "| hot path | instructions per call (beyond a bare call) |"
echo "| --- | --- |"
for path in fetch_add consecutive call consecutive_uncounted window window_cached count_window reject_monotonic reject_coarse reject_cached bulkhead budget backoff; do
  total=$(count "$path")
  awk -v t="$total" -v b="$base" -v n="$n" -v p="$path" 'BEGIN { printf "| %s | %.1f |\n", p, (t - b) / n }'
done
