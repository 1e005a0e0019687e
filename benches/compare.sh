#!/usr/bin/env bash
# The breaker's hot paths at an earlier commit and now, in one run: the
# `breaker` bench is built at REV (a worktree of its own) and at the working
# tree, then the two builds take turns on the same paths, ROUNDS times
# each, so that the machine's drift hits both alike. Prints each path's
# median over the rounds for both, and the difference in ns.
# Usage: benches/compare.sh REV [ROUNDS] [FILTER]
#   FILTER, a regex of bench ids: by default the Closed success paths and
#   the rejections of tripwire's breaker.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: benches/compare.sh REV [ROUNDS] [FILTER]}
rounds=${2:-3}
filter=${3:-'^(closed_success|rejection)/tripwire/'}
target=${CARGO_TARGET_DIR:-target}
work="$target/compare"
mkdir -p "$work"
work=$(cd "$work" && pwd)

# The bench executable of the tree in $1, built into target dir $2.
build() {
  (cd "$1" && CARGO_TARGET_DIR="$2" cargo bench --quiet -p tripwire-benches --bench breaker --no-run \
    --message-format=json 2>/dev/null) |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "breaker" and m.get("executable"):
        print(m["executable"])'
}

# The worktree stays for the next run at the same REV, whose build is then
# still fresh (a new checkout's file times would rebuild it).
want=$(git rev-parse "$rev^{commit}")
if [ "$(git -C "$work/before" rev-parse HEAD 2>/dev/null)" != "$want" ]; then
  git worktree remove --force "$work/before" 2>/dev/null || rm -rf "$work/before"
  git worktree prune
  git worktree add --quiet --detach "$work/before" "$want"
fi
before=$(build "$work/before" "$work/target-before")
after=$(build "$PWD" "$target")
[ -x "$before" ] && [ -x "$after" ] || { echo "compare.sh: a bench did not build" >&2; exit 1; }

# One pass of executable $1 over the filter: "id<TAB>ns" per path.
pass() {
  CRITERION_HOME="$work/criterion-$2" "$1" --bench "$filter" --warm-up-time 1 --measurement-time 2 \
    --noplot --discard-baseline 2>/dev/null |
    awk '!/time:/ && /^[a-z_]+\// { id = $0; sub(/[ \t]+$/, "", id) }
         /time:/ { pre = $0; sub(/[ \t]*time:.*/, "", pre); if (pre != "") id = pre
                   # the middle of criterion'"'"'s [low mid high]
                   v = $(NF-3); u = $(NF-2)
                   f = (u == "ps") ? 0.001 : (u == "ns") ? 1 : (u == "µs" || u == "us") ? 1000 : 1e6
                   if (id != "") printf "%s\t%.4f\n", id, v * f; id = "" }'
}

results="$work/results.tsv"
: >"$results"
for round in $(seq "$rounds"); do
  echo "round $round of $rounds" >&2
  pass "$before" before | sed 's/^/before\t/' >>"$results"
  pass "$after" after | sed 's/^/after\t/' >>"$results"
done

python3 - "$results" "$rev" "$(git rev-parse --short HEAD)" <<'EOF'
import statistics, sys
from collections import defaultdict
path, rev, head = sys.argv[1:]
times = defaultdict(lambda: defaultdict(list))
for line in open(path):
    side, bench, ns = line.rstrip("\n").split("\t")
    times[bench][side].append(float(ns))
print(f"| path | before ({rev}), ns | after ({head}), ns | after - before, ns |")
print("| --- | ---: | ---: | ---: |")
for bench in sorted(times):
    b = statistics.median(times[bench]["before"])
    a = statistics.median(times[bench]["after"])
    print(f"| {bench} | {b:.2f} | {a:.2f} | {a - b:+.2f} |")
EOF
