#!/usr/bin/env bash
# Builds the C library (release) and installs it under a prefix:
#
#   PREFIX/include/tripwire.h, tripwire.hpp
#   PREFIX/lib/libtripwire.a
#   PREFIX/lib/libtripwire.so.0 (its soname) and the libtripwire.so link
#   PREFIX/lib/pkgconfig/tripwire.pc         links the shared library
#   PREFIX/lib/pkgconfig/tripwire-static.pc  links the static library
#
# Usage: ffi/install.sh [PREFIX]   (default PREFIX: ./out)
#
# Cargo names the artifacts after the crate's library, tripwire_ffi (the
# name `tripwire` belongs to the core crate); this script installs them
# under the C name, libtripwire.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:-out}")
target_dir=${CARGO_TARGET_DIR:-target}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
# What rustc says a static Rust library needs from the system
# (`--print native-static-libs`) on Linux with glibc.
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

cargo build --release -p tripwire-ffi

install -d "$prefix/include" "$prefix/lib/pkgconfig"
install -m 644 include/tripwire.h include/tripwire.hpp "$prefix/include/"
install -m 644 "$target_dir/release/libtripwire_ffi.a" "$prefix/lib/libtripwire.a"
install -m 755 "$target_dir/release/libtripwire_ffi.so" "$prefix/lib/libtripwire.so.0"
ln -sf libtripwire.so.0 "$prefix/lib/libtripwire.so"

pc() {
  cat <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: Lock-free circuit breakers for C and C++ ($2)
Version: $version
URL: https://github.com/tripwire-rs/tripwire
Cflags: -I\${includedir}
$3
PC
}
pc tripwire "shared library" "Libs: -L\${libdir} -ltripwire" >"$prefix/lib/pkgconfig/tripwire.pc"
pc tripwire-static "static library" "Libs: \${libdir}/libtripwire.a $static_libs" \
  >"$prefix/lib/pkgconfig/tripwire-static.pc"
echo "installed tripwire $version under $prefix"
