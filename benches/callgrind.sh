#!/usr/bin/env bash
# Instructions per operation of the hot paths, counted by valgrind's
# callgrind: repeatable on a noisy machine, unlike time. Prints Markdown
# tables: the Rust hot paths, then the C ABI's (a C program against the
# static and the shared library, next to the same path in Rust).
# Usage: benches/callgrind.sh [iterations] [all|rust|c]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
part=${2:-all}
case $part in all | rust | c) ;; *) echo "callgrind.sh: part is all, rust or c (got $part)" >&2; exit 2 ;; esac
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install -y valgrind" >&2; exit 1; }
cargo build --quiet --release -p tripwire-benches --example hot_path --example hot_path_storage
bin=${CARGO_TARGET_DIR:-target}/release/examples/hot_path
# The same paths on breakers whose storage holds only what their config
# needs: a program of its own, next to its own bare call.
bin_storage=${CARGO_TARGET_DIR:-target}/release/examples/hot_path_storage
count() { # instructions for n (or $3) iterations of path $2 of program $1
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "${3:-$n}" 2>&1 |
    awk '/Collected/ {print $4}'
}
per_call() { # (total - bare) / n
  awk -v t="$1" -v b="$2" -v n="$n" 'BEGIN { printf "%.1f", (t - b) / n }'
}
# The loop and the guarded call alone, measured the same way, are taken off.
base=$(count "$bin" bare)
if [ "$part" != c ]; then
  base_storage=$(count "$bin_storage" bare)
  echo "| hot path | instructions per call (beyond a bare call) |"
  echo "| --- | --- |"
  for path in fetch_add consecutive consecutive_no_window call consecutive_uncounted window window_time_only window_cached count_window count_window_only reject_monotonic reject_no_window reject_coarse reject_cached bulkhead budget backoff pipeline pipeline_reject named_call keyed keyed_pinned tower_bare tower_closed tower_open; do
    case $path in
      *_no_window | *_only) echo "| $path | $(per_call "$(count "$bin_storage" "$path")" "$base_storage") |" ;;
      # Its setup (10,000 keys into the map) is counted in a run of no
      # iterations and taken off, in place of the bare path's.
      keyed*) echo "| $path | $(per_call "$(($(count "$bin" "$path") - $(count "$bin" "$path" 0) + $(count "$bin" bare 0)))" "$base") |" ;;
      *) echo "| $path | $(per_call "$(count "$bin" "$path")" "$base") |" ;;
    esac
  done
fi
if [ "$part" != rust ]; then
  # benches/c/hot_path.c against the installed library, both link kinds.
  if ! log=$(ffi/install.sh out 2>&1); then echo "$log" >&2; exit 1; fi
  mkdir -p out/bin
  pc=out/lib/pkgconfig
  cc -std=c11 -O2 -Wall -Wextra -Werror benches/c/hot_path.c \
    $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs tripwire-static) -o out/bin/hot_path_static
  cc -std=c11 -O2 -Wall -Wextra -Werror benches/c/hot_path.c \
    $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs tripwire) -Wl,-rpath,"$PWD/out/lib" -o out/bin/hot_path_shared
  base_static=$(count out/bin/hot_path_static bare)
  base_shared=$(count out/bin/hot_path_shared bare)
  [ "$part" = all ] && echo
  echo "| C ABI path (try_acquire_at + record_at success, closed) | C, static | C, shared | Rust, same path |"
  echo "| --- | --- | --- | --- |"
  for path in consecutive consecutive_uncounted fast_consecutive fast_consecutive_uncounted; do
    rust=$(per_call "$(count "$bin" "${path#fast_}")" "$base")
    echo "| $path | $(per_call "$(count out/bin/hot_path_static "$path")" "$base_static") |" \
      "$(per_call "$(count out/bin/hot_path_shared "$path")" "$base_shared") | $rust |"
  done
fi
