#!/usr/bin/env bash
# Builds programs against a tripwire installed by ffi/install.sh, every way
# a C or C++ project links it, and runs each without LD_LIBRARY_PATH.
#
# Usage: ffi/tests/cmake_consumer/check.sh PREFIX WORKDIR ROUTE...
#   pkg-config-static  cc/c++ + `pkg-config [--static] --libs tripwire-static`
#   pkg-config-shared  cc/c++ + `pkg-config --libs tripwire` (its rpath)
#   cmake-config       this CMake project, find_package(tripwire CONFIG),
#                      both targets, built and installed
#   cmake-pkg-config   this CMake project, pkg_check_modules(IMPORTED_TARGET)
#   cmake-versions     which find_package version requests are met
#   all                every route above
# A static program must not need libtripwire.so; a shared one must load it
# from PREFIX/lib. Needs cc, c++, pkg-config, cmake and readelf.
set -euo pipefail
if [ "$#" -lt 3 ]; then
  sed -n '/^# Usage:/,/^# from/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
prefix=$(realpath -- "$1")
work=$(realpath -m -- "$2")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
unset LD_LIBRARY_PATH
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
version=$(pkg-config --modversion tripwire)
IFS=. read -r major minor patch <<<"${version%%-*}"
mkdir -p "$work"

fail() {
  echo "check.sh: $*" >&2
  exit 1
}

# Runs a program as a user would (no LD_LIBRARY_PATH) and checks how it
# got the library: `static` (no libtripwire.so needed) or `shared` (loaded
# from PREFIX/lib, found through the program's RPATH/RUNPATH).
run_as() {
  local kind=$1 program=$2 out dynamic loaded
  out=$("$program") || fail "$program failed (exit $?)"
  # Each tool's output is read in full before grep sees it: `tool | grep -q`
  # under pipefail fails when grep's early exit kills the tool with SIGPIPE.
  dynamic=$(readelf -d "$program")
  case $out in *"tripwire $version"*) ;; *) fail "$program printed: $out" ;; esac
  if [ "$kind" = static ]; then
    if grep -q 'NEEDED.*libtripwire' <<<"$dynamic"; then
      fail "$program is meant to be static but needs: $(grep NEEDED <<<"$dynamic")"
    fi
  else
    grep -q 'NEEDED.*\[libtripwire\.so\.0\]' <<<"$dynamic" ||
      fail "$program does not need libtripwire.so.0"
    loaded=$(LD_TRACE_LOADED_OBJECTS=1 "$program")
    grep -q "=> $prefix/lib/libtripwire.so.0 " <<<"$loaded" ||
      fail "$program does not load $prefix/lib/libtripwire.so.0: $loaded"
  fi
  echo "ok: $kind ${program#"$work"/}: $out"
}

compile() { # compile OUT PKG [pkg-config options...]
  local out=$1 pkg=$2
  shift 2
  local flags
  flags=$(pkg-config "$@" --cflags --libs "$pkg")
  # shellcheck disable=SC2086 # pkg-config's output is meant to be split
  cc -std=c11 -Wall -Wextra -Werror -DEXPECTED_VERSION="\"$version\"" "$here/consumer.c" \
    $flags -o "$out-c"
  # shellcheck disable=SC2086
  c++ -std=c++17 -Wall -Wextra -Werror -DEXPECTED_VERSION="\"$version\"" "$here/consumer.cpp" \
    $flags -o "$out-cpp"
}

route_pkg_config_static() {
  local dir="$work/pkg-config-static"
  mkdir -p "$dir"
  compile "$dir/plain" tripwire-static
  compile "$dir/static-flag" tripwire-static --static
  for p in plain-c plain-cpp static-flag-c static-flag-cpp; do run_as static "$dir/$p"; done
}

route_pkg_config_shared() {
  local dir="$work/pkg-config-shared"
  mkdir -p "$dir"
  compile "$dir/plain" tripwire
  for p in plain-c plain-cpp; do run_as shared "$dir/$p"; done
}

cmake_project() { # cmake_project NAME VIA
  local dir="$work/$1"
  rm -rf "$dir"
  cmake -S "$here" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" -DTRIPWIRE_VIA="$2" \
    -DTRIPWIRE_REQUEST="$major.$minor" -DEXPECTED_VERSION="$version" \
    -DCMAKE_INSTALL_PREFIX="$dir/installed" >"$dir.configure.log" ||
    { cat "$dir.configure.log" >&2; fail "configuring the consumer ($2) failed"; }
  cmake --build "$dir/build" >"$dir.build.log" 2>&1 ||
    { cat "$dir.build.log" >&2; fail "building the consumer ($2) failed"; }
  cmake --install "$dir/build" >/dev/null
  for where in build installed/bin; do
    for lang in c cpp; do
      run_as static "$dir/$where/consumer_${lang}_static"
      run_as shared "$dir/$where/consumer_${lang}_shared"
    done
  done
}

route_cmake_config() { cmake_project cmake-config CONFIG; }
route_cmake_pkg_config() { cmake_project cmake-pkg-config PKG_CONFIG; }

route_cmake_versions() {
  local dir="$work/cmake-versions" n=0
  mkdir -p "$dir"
  find_with() { # find_with REQUEST [cmake options...]: 0 if found
    local request=$1
    shift
    n=$((n + 1))
    cmake -S "$here/find_only" -B "$dir/$n" -DCMAKE_PREFIX_PATH="$prefix" \
      -DTRIPWIRE_REQUEST="$request" "$@" >"$dir/$n.log" 2>&1
  }
  refused() { # refused REQUEST [SUFFIX]: the log says the package was seen and refused
    grep -q "considered but not accepted" "$dir/$n.log" &&
      grep -q "tripwireConfig.cmake, version: $version${2:-}" "$dir/$n.log" ||
      { cat "$dir/$n.log" >&2; fail "find_package(tripwire $1) failed for another reason"; }
  }
  local request
  for request in "" "$major.$minor" "$version" "$major.$minor...$major.$((minor + 2))" \
    "$major.$minor...<$major.$((minor + 1))" "$major.$minor...$major.$minor"; do
    find_with "$request" || { cat "$dir/$n.log" >&2; fail "find_package(tripwire $request) failed"; }
    grep -q "found tripwire $version" "$dir/$n.log" || fail "request '$request': $(cat "$dir/$n.log")"
    echo "ok: find_package(tripwire $request) finds $version"
  done
  for request in "$major.$((minor + 1))" "$((major + 1)).0" "$major.$minor.$((patch + 1))" \
    "$major.$((minor + 1))...$major.$((minor + 3))"; do
    if find_with "$request"; then fail "find_package(tripwire $request) accepted $version"; fi
    refused "$request"
    echo "ok: find_package(tripwire $request) refuses $version"
  done
  # A build for another pointer size is refused.
  if find_with "" -DCMAKE_SIZEOF_VOID_P=2; then fail "a 16-bit project accepted the library"; fi
  refused "" " ("
  echo "ok: a project with another pointer size refuses it"
}

routes=()
for route in "$@"; do
  case $route in
    all) routes+=(pkg-config-static pkg-config-shared cmake-config cmake-pkg-config cmake-versions) ;;
    pkg-config-static | pkg-config-shared | cmake-config | cmake-pkg-config | cmake-versions)
      routes+=("$route") ;;
    *) fail "unknown route $route" ;;
  esac
done
for route in "${routes[@]}"; do
  "route_${route//-/_}"
done
