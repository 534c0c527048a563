#!/usr/bin/env bash
# Builds and runs tests/host (a C and a C++ host) three ways against the scriptprof build in $1
# (sources in $2):
# the installed CMake package, the installed pkg-config file, and add_subdirectory.
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null

echo "== find_package(scriptprof) after cmake --install"
cmake -S "$src/tests/host" -B "$work/package" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/package" -j2 >/dev/null
"$work/package/host" "$work/package.tree" | head -5
grep -q "game_update (zone)" "$work/package.tree"
"$work/package/host_cpp" >"$work/cpp.out"; head -3 "$work/cpp.out"

echo "== pkg-config scriptprof"
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs scriptprof)
# shellcheck disable=SC2086
cc -o "$work/pc-host" "$src/tests/host/host.c" $flags
"$work/pc-host" "$work/pc.tree" | head -5
# shellcheck disable=SC2086
c++ -std=c++17 -o "$work/pc-host-cpp" "$src/tests/host/host.cpp" $flags
"$work/pc-host-cpp" >"$work/cpp.out"; head -3 "$work/cpp.out"

echo "== add_subdirectory(scriptprof)"
cmake -S "$src/tests/host" -B "$work/subdir" -DSCRIPTPROF_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/subdir" -j2 --target host host_cpp >/dev/null
"$work/subdir/host" "$work/subdir.tree" | head -5
"$work/subdir/host_cpp" >"$work/cpp.out"; head -3 "$work/cpp.out"
echo "host: all three builds of both hosts ran"
