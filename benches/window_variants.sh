#!/usr/bin/env bash
# Times the count window's success path against variants of its one write
# (benches/variants/*.patch: a fetch_add in place of the CAS, a write whose
# result nothing reads, no write at all), to show what the write costs and
# what a cheaper one would give up. The variants are experiments, not
# candidates: each patch's header says why it is unsafe.
#
# Each variant is built into a scratch worktree of HEAD (commit first) with
# its patch applied; then every build runs `hot_path count_window` on one
# core, in turns, and the best of the rounds is kept (the machine is shared,
# so a best of several interleaved runs is steadier than any one run).
# The windowless breaker (`consecutive`) and the bare loop are timed from
# the unpatched build in the same rounds.
#
# Usage: bash benches/window_variants.sh [rounds] [iterations]
# Takes about 4 minutes for the builds and 1 for 8 rounds of 20M calls.
set -euo pipefail
rounds=${1:-8}
iterations=${2:-20000000}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$repo"
target="$repo/target/variants"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tripwire-variants.XXXXXX")
tree="$scratch/tree"
git worktree add --quiet --detach "$tree" HEAD
cleanup() {
  git worktree remove --force "$tree" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

build() { # name: builds hot_path from the scratch tree as it stands
  (cd "$tree" && cargo build --quiet --release -p tripwire-benches --example hot_path --target-dir "$target")
  cp "$target/release/examples/hot_path" "$scratch/$1"
}
names=(as-is)
build as-is
for patch in benches/variants/*.patch; do
  name=$(basename "$patch" .patch)
  git -C "$tree" apply "$repo/$patch"
  build "$name"
  git -C "$tree" checkout --quiet -- .
  names+=("$name")
done

time_of() { # binary path: ns per iteration of one run, on core 1
  taskset -c 1 "$scratch/$1" "$2" "$iterations" | awk '{print $1}'
}
declare -A best
runs=("${names[@]/%/ count_window}" "as-is consecutive" "as-is bare")
for ((round = 0; round < rounds; round++)); do
  for run in "${runs[@]}"; do
    ns=$(time_of $run)
    key=${run// /:}
    best[$key]=$(awk -v a="$ns" -v b="${best[$key]:-1e9}" 'BEGIN { print (a < b) ? a : b }')
  done
done

base=${best[as-is:count_window]}
echo "| build | path | ns per call, best of $rounds | − the count window as it is |"
echo "| --- | --- | --- | --- |"
for run in "${runs[@]}"; do
  key=${run// /:}
  awk -v r="$run" -v ns="${best[$key]}" -v b="$base" \
    'BEGIN { split(r, p, " "); printf "| %s | %s | %.2f | %+.2f |\n", p[1], p[2], ns, ns - b }'
done
