#!/usr/bin/env bash
# The loom models' mutation check: every core/tests/mutants/*.patch weakens
# one ordering or check in the core, and names (in its `Expect:` lines) the
# loom models that must fail once it is applied. This script applies each
# patch in turn to a scratch worktree of HEAD, runs the models it names, and
# prints mutation -> model -> caught/missed.
#
# Running the models is slow, so .ci/run only does --check (below): a release build of the core per
# mutation, and each named model run once unchanged and once mutated. All 33
# patches took 6 min (357 s) on 2 cores shared with other builds, with
# target/loom-mutants already built once; a first run builds the loom
# dependencies too (9 min for 22 of the patches). Run it after changing a
# loom model or a protocol it guards:
#
#   bash core/tests/mutants/run.sh                  # every patch
#   bash core/tests/mutants/run.sh state-admit-one-probe-too-many ...   # some, by name
#   bash core/tests/mutants/run.sh --check          # every patch applies and builds
#
# --check is the cheap part, which .ci/run does on every run: each patch
# still applies (`git apply --check`) and the patched core still builds
# (`cargo check` of the library with `--cfg loom`, in target/mutants-check),
# without running any model. All 39 took 29 s on 2 shared cores with
# CARGO_INCREMENTAL=0 (as .ci/run sets it), after a first build of the
# core's dependencies there (about 12 s more).
#
# It checks the committed HEAD: commit first (uncommitted changes are left
# out, and it says so). Builds go to target/loom-mutants. Before any patch,
# every named model must pass on the unchanged tree. Exit status 0 when every
# mutation is caught by every model it names; 1 when one is missed, a patch
# no longer applies (refresh it: see README.md) or does not build, or a
# model fails unchanged. See core/tests/mutants/README.md.
set -euo pipefail

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$repo"
mutants=core/tests/mutants
target="$repo/target/loom-mutants"

check_only=0
if [ "${1:-}" = --check ]; then
  check_only=1
  shift
fi

if [ $# -gt 0 ]; then
  patches=()
  for name in "$@"; do patches+=("$mutants/${name%.patch}.patch"); done
else
  patches=("$mutants"/*.patch)
fi
for p in "${patches[@]}"; do
  [ -f "$p" ] || { echo "no such mutation: $p" >&2; exit 2; }
done
if ! git diff --quiet HEAD -- core; then
  echo "warning: core/ has uncommitted changes; checking HEAD without them" >&2
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/tripwire-mutants.XXXXXX")
tree="$scratch/tree"
git worktree add --quiet --detach "$tree" HEAD
cleanup() {
  git worktree remove --force "$tree" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

# --check: every patch applies to HEAD and the patched core builds.
if [ "$check_only" -eq 1 ]; then
  status=0
  export RUSTFLAGS="--cfg loom"
  check=(cargo check -q -p tripwire-breaker --lib --features keyed --target-dir "$repo/target/mutants-check")
  (cd "$tree" && "${check[@]}") || { echo "HEAD itself does not build with --cfg loom" >&2; exit 1; }
  for p in "${patches[@]}"; do
    name=$(basename "$p" .patch)
    if ! git -C "$tree" apply --check "$repo/$p" 2>/dev/null; then
      echo "STALE: $name no longer applies to $(sed -n 's|^+++ b/||p' "$p" | tr '\n' ' ')(refresh it: see README.md)"
      status=1
      continue
    fi
    git -C "$tree" apply "$repo/$p"
    if ! (cd "$tree" && "${check[@]}") >"$scratch/log" 2>&1; then
      echo "BROKEN: $name does not build"
      tail -n 20 "$scratch/log" >&2
      status=1
    fi
    git -C "$tree" checkout --quiet -- .
  done
  [ "$status" -eq 0 ] && echo "${#patches[@]} mutation patches apply to HEAD and build"
  exit "$status"
fi

# The models a patch names, one "test-file model" per line.
expected() { sed -n 's/^Expect: *//p' "$1"; }

# Builds and runs one loom model in the scratch tree. Prints pass, fail,
# hang or build-error; the log goes to $scratch/log.
run_model() {
  local file=$1 model=$2 features=()
  if [ "$file" = loom_bulkhead_async ]; then features=(--features async); fi
  if [ "$file" = loom_keyed ]; then features=(--features keyed); fi
  local cargo=(cargo test -q -p tripwire-breaker --release --target-dir "$target" "${features[@]}" --test "$file")
  if ! (cd "$tree" && RUSTFLAGS="--cfg loom" "${cargo[@]}" --no-run) >"$scratch/log" 2>&1; then
    echo build-error
    return
  fi
  local rc=0
  (cd "$tree" && RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 timeout 900 "${cargo[@]}" -- --exact "$model") \
    >"$scratch/log" 2>&1 || rc=$?
  case $rc in
    0) echo pass ;;
    124) echo hang ;;
    *) echo fail ;;
  esac
}

# Where the first panic in the log was raised and the first line of its
# message: what the model saw.
why() {
  awk '/panicked at/ {
    where = $NF; sub(/:[0-9]+:$/, "", where); sub(/.*\//, "", where)
    getline; print where ": " $0; exit
  }' "$scratch/log" | cut -c1-110
}

status=0
echo "baseline: every named model passes on HEAD"
for pair in $(for p in "${patches[@]}"; do expected "$p"; done | sort -u | tr ' ' ':'); do
  result=$(run_model "${pair%%:*}" "${pair#*:}")
  if [ "$result" != pass ]; then
    echo "  ${pair%%:*} ${pair#*:}: $result on the unchanged tree" >&2
    tail -n 30 "$scratch/log" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || { echo "baseline failed: fix the models before checking mutations" >&2; exit 1; }

rows=()
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  files=$(sed -n 's|^+++ b/||p' "$p" | tr '\n' ' ')
  if ! git -C "$tree" apply --check "$repo/$p" 2>/dev/null; then
    rows+=("$name|(patch)|STALE: no longer applies to $files")
    status=1
    continue
  fi
  git -C "$tree" apply "$repo/$p"
  while read -r file model; do
    result=$(run_model "$file" "$model")
    case $result in
      fail) verdict="caught: $(why)" ;;
      pass) verdict=MISSED; status=1 ;;
      hang) verdict="MISSED (hung)"; status=1 ;;
      build-error) verdict="BROKEN: does not build"; status=1; tail -n 20 "$scratch/log" >&2 ;;
    esac
    rows+=("$name|$file::$model|$verdict")
    printf '  %s: %s::%s %s\n' "$name" "$file" "$model" "$verdict"
  done < <(expected "$p")
  git -C "$tree" checkout --quiet -- .
done

echo
printf '%s | %s | %s\n' mutation model result
for row in "${rows[@]}"; do
  IFS='|' read -r name model verdict <<<"$row"
  printf '%s | %s | %s\n' "$name" "$model" "$verdict"
done
exit "$status"
