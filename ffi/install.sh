#!/usr/bin/env bash
# Builds the C library (release) and installs it under a prefix:
#
#   PREFIX/include/tripwire.h, tripwire_inline.h (which it includes), tripwire.hpp
#   PREFIX/lib/libtripwire.a, and libtripwire-static.a, a link to it
#   PREFIX/lib/libtripwire.so.0 (its soname) and the libtripwire.so link
#   PREFIX/lib/pkgconfig/tripwire.pc         links the shared library
#   PREFIX/lib/pkgconfig/tripwire-static.pc  links the static library
#   PREFIX/lib/cmake/tripwire/               find_package(tripwire CONFIG):
#                                            tripwire::tripwire (shared),
#                                            tripwire::tripwire_static
#
# Usage: ffi/install.sh [--prelink-static] [PREFIX]
#   PREFIX defaults to ./out; a relative PREFIX is taken from the directory
#   the script is run from.
#   --prelink-static: libtripwire.a holds a single object, prelinked with
#   `ld -r`, whose only global symbols are the tw_* functions, so the Rust
#   runtime inside it cannot clash with another Rust static library in the
#   same program (ffi/README.md, "Symbols"). Needs GNU ld and objcopy.
#
# Cargo names the artifacts after the crate's library, tripwire_ffi (the
# name `tripwire` belongs to the core crate); this script installs them
# under the C name, libtripwire.
set -euo pipefail

usage() { sed -n '/^# Usage:/,/^# *$/p' "$0" | sed 's/^# \{0,1\}//'; }
prelink=0
prefix_arg=
while [ "$#" -gt 0 ]; do
  case $1 in
    --prelink-static) prelink=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "install.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *)
      if [ -n "$prefix_arg" ]; then
        echo "install.sh: one PREFIX only (got $prefix_arg and $1)" >&2
        exit 2
      fi
      prefix_arg=$1
      ;;
  esac
  shift
done
# Resolved before moving to the checkout: a relative prefix is the caller's.
prefix=$(realpath -m -- "${prefix_arg:-out}")
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  CARGO_TARGET_DIR=$(realpath -m -- "$CARGO_TARGET_DIR")
  export CARGO_TARGET_DIR
fi
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"$/\1/p;T;q' Cargo.toml)
target_dir=$(cargo metadata --format-version 1 --no-deps --color never |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
if [ -z "$target_dir" ]; then
  echo "install.sh: cargo metadata did not give the target directory" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One build of every crate type; rustc also prints what the static library
# needs from the system (Cargo replays the note when the build is fresh).
cargo rustc --release -p tripwire-ffi --lib --color never -- --print native-static-libs 2>&1 |
  tee "$work/build.log" >&2
native_libs=$(sed -n 's/^note: native-static-libs: //p' "$work/build.log" | tail -n 1)
if [ -z "$native_libs" ]; then
  echo "install.sh: rustc printed no native-static-libs note" >&2
  exit 1
fi
archive="$target_dir/release/libtripwire_ffi.a"
shared="$target_dir/release/libtripwire_ffi.so"

if [ "$prelink" = 1 ]; then
  ld=${LD:-ld}
  objcopy=${OBJCOPY:-objcopy}
  ld_version=$("$ld" --version 2>/dev/null || true)
  if ! grep -q '^GNU ld' <<<"$ld_version"; then
    echo "install.sh: --prelink-static needs GNU ld (binutils) as \$LD; $ld is not" >&2
    exit 1
  fi
  # Every member in one relocatable object, COMDAT groups resolved.
  # (No --gc-sections: with -r, GNU ld 2.40 turns weak undefined symbols,
  # such as glibc functions std looks up optionally, into strong ones.)
  "$ld" -r --whole-archive "$archive" --force-group-allocation -o "$work/all.o"
  # Every defined global but tw_* becomes local; the embedded LLVM bitcode
  # (unused by C linkers, and confusing to nm's plugins) goes.
  "$objcopy" --wildcard --keep-global-symbol='tw_*' \
    --remove-section=.llvmbc --remove-section=.llvmcmd "$work/all.o" "$work/tripwire.o"
  leaked=$(readelf -sW "$work/tripwire.o" |
    awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" && $8 !~ /^tw_/ { print $8 }')
  if [ -n "$leaked" ]; then
    echo "install.sh: the prelinked object still defines non-tw_ globals:" >&2
    echo "$leaked" >&2
    exit 1
  fi
  rm -f "$work/libtripwire.a"
  ar rcsD "$work/libtripwire.a" "$work/tripwire.o"
  archive="$work/libtripwire.a"
fi

lib="$prefix/lib"
install -d "$prefix/include" "$lib/pkgconfig" "$lib/cmake/tripwire"
install -m 644 include/tripwire.h include/tripwire_inline.h include/tripwire.hpp "$prefix/include/"
install -m 644 "$archive" "$lib/libtripwire.a"
# -ltripwire-static can only mean the archive (there is no such .so), so
# that pkg-config users and CMake's pkg_check_modules both link it.
ln -sf libtripwire.a "$lib/libtripwire-static.a"
install -m 755 "$shared" "$lib/libtripwire.so.0"
ln -sf libtripwire.so.0 "$lib/libtripwire.so"

# Programs linked with tripwire.pc find the library at run time through an
# rpath, unless it lies where the dynamic linker looks anyway (/usr).
rpath=" -Wl,-rpath,\${libdir}"
if [ "$prefix" = /usr ]; then
  rpath=
fi
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
pc tripwire "shared library" "Libs: -L\${libdir} -ltripwire$rpath" >"$lib/pkgconfig/tripwire.pc"
# Everything under Libs (none under Libs.private): a static library always
# needs its system libraries, with or without `pkg-config --static`.
pc tripwire-static "static library" "Libs: -L\${libdir} -ltripwire-static $native_libs" \
  >"$lib/pkgconfig/tripwire-static.pc"

# The CMake package: relocatable (paths from the file's own location).
cmake_libs=$(echo "$native_libs" | tr -s ' ' ';')
sed -e "s|@NATIVE_STATIC_LIBS@|$cmake_libs|" ffi/cmake/tripwireTargets.cmake.in \
  >"$lib/cmake/tripwire/tripwireTargets.cmake"
case $(readelf -h "$shared" | awk '$1 == "Class:" { print $2 }') in
  ELF64) pointer_size=8 ;;
  ELF32) pointer_size=4 ;;
  *) echo "install.sh: $shared is neither ELF64 nor ELF32" >&2; exit 1 ;;
esac
sed -e "s|@VERSION@|$version|" -e "s|@SIZEOF_VOID_P@|$pointer_size|" \
  ffi/cmake/tripwireConfigVersion.cmake.in >"$lib/cmake/tripwire/tripwireConfigVersion.cmake"
install -m 644 ffi/cmake/tripwireConfig.cmake "$lib/cmake/tripwire/"

kind=archive
if [ "$prelink" = 1 ]; then kind="prelinked archive"; fi
echo "installed tripwire $version under $prefix ($kind)"
