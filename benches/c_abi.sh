#!/usr/bin/env bash
# One try-acquire + record through the C header (a C program against the
# static library) next to the same calls from Rust, in one run, as a
# Markdown table. The measurements are benches/c/timing.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "| path | ns per iteration (best of 5 loops) |"
echo "| --- | --- |"
bash benches/c/timing.sh 2>/dev/null | sed -n 's/^\(.*\):[[:space:]]*\([0-9.]*\) ns$/| \1 | \2 |/p' | sed 's/  */ /g'
