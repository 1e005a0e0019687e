#!/usr/bin/env bash
# Runs every benchmark in one go and writes benches/RESULTS.md and
# benches/chart.svg. Takes about 20 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target/bench"
rm -rf "$target/criterion"
quick=(--warm-up-time 1 --measurement-time 3)
cargo bench -p tripwire-benches --bench breaker -- "${quick[@]}"
cargo bench -p tripwire-benches --bench pieces -- "${quick[@]}"
cargo bench -p tripwire-benches --bench layers -- "${quick[@]}"
cargo bench -p tripwire-benches --bench contention
cargo bench -p tripwire-benches --bench limiter -- "${quick[@]}"
cargo bench -p tripwire-benches --bench keyed -- "${quick[@]}"
cargo run --quiet --release -p tripwire-benches --example keyed_memory > "$target/bench/keyed_memory.md"
cargo bench -p tripwire-benches --bench heap | grep '^|' > "$target/bench/heap.md"
cargo bench -p tripwire-benches --bench heap -- --sizes | grep '^|' > "$target/bench/sizes.md"
# The fleet: through TRIPWIRE_BENCH_REDIS / TRIPWIRE_TEST_REDIS, or a
# redis-server of its own (without one: the unlinked rows only).
cargo bench -p tripwire-benches --bench fleet -- "${quick[@]}"
cargo run --quiet --release -p tripwire-benches --example fleet_latency -- 200 > "$target/bench/fleet_latency.md" ||
  echo "(not measured: no redis-server)" > "$target/bench/fleet_latency.md"
bash benches/callgrind.sh > "$target/bench/callgrind.md"
cargo run --quiet --release -p tripwire-benches --example clock_lag -- 3 > "$target/bench/clock_lag.md"
if [ -x benches/c_abi.sh ]; then bash benches/c_abi.sh > "$target/bench/c_abi.md"; fi
if [ -x benches/python/run.sh ]; then bash benches/python/run.sh > "$target/bench/python.md"; fi
python3 benches/report.py
