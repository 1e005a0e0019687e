#!/usr/bin/env bash
# A rough timing of one try-acquire + record through the C ABI next to the
# same call in Rust, in one run: builds and installs the release library
# under out/, compiles benches/c/timing.c with -O2 against the static
# library, runs it, then runs ffi/examples/abi_timing.rs.
set -euo pipefail
cd "$(dirname "$0")/../.."
ffi/install.sh out >/dev/null
mkdir -p out/bin
cc -std=c11 -O2 -Wall -Wextra -Werror benches/c/timing.c \
  $(PKG_CONFIG_PATH=out/lib/pkgconfig pkg-config --cflags --libs tripwire-static) -o out/bin/timing
out/bin/timing
cargo run --release -q -p tripwire-ffi --example abi_timing
