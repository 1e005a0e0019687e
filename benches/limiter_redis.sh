#!/usr/bin/env bash
# Redis's work per 1,000 rate-limit checks: tripwire's fleet rate limiter
# next to the `limits` Python package's Redis backend, through one
# redis-server of this script's own: the commands Redis ran (those a Lua
# script calls included) and the time per check on loopback. Prints a
# Markdown table.
# Usage: benches/limiter_redis.sh
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
url="redis://127.0.0.1:$port"
venv=${CARGO_TARGET_DIR:-target}/limiter-redis-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check limits==5.8.0 redis==8.1.0 >&2
echo "| 1,000 checks | commands Redis ran (inside scripts too) | time per check |"
echo "| --- | --: | --: |"
TRIPWIRE_BENCH_REDIS=$url cargo run --quiet --release -p tripwire-benches --example limiter_round_trips
"$venv/bin/python" benches/python/limiter_redis.py "$url"
