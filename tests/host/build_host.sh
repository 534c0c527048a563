#!/usr/bin/env bash
# Builds and runs tests/host (a C and a C++ host) three ways against the scriptprof build in $1
# (sources in $2):
# the installed CMake package (also from a C-only project), the installed pkg-config file, and
# add_subdirectory.
set -euo pipefail
build=$1 src=$2
# (Its builds run niced: the tests beside it on the machine's cores measure time.)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/lib/output_checks.sh"
cmake --install "$build" --prefix "$work/prefix" >/dev/null

echo "== the installed tools and modules"
output_has "main chunk" "$work/prefix/bin/luaprof" --hz 1000 -e "$BUSY_LUA"
"$work/prefix/bin/luaprof" --hz 1000 -o "$work/tools.folded" -e "$BUSY_LUA" >/dev/null
output_has "Sample count" "$work/prefix/bin/profconv" "$work/tools.folded"
output_has "main chunk" "$work/prefix/bin/profdiff" "$work/tools.folded" "$work/tools.folded"
lua5.4 -e "package.cpath='$work/prefix/lib/lua/5.4/?.so'" -e 'assert(require("profiler").statprof)'
if [ -x "$work/prefix/bin/luajitprof" ]; then
  output_has "jit%" "$work/prefix/bin/luajitprof" --hz 1000 -e "$BUSY_LUA"
  luajit -e "package.cpath='$work/prefix/lib/lua/5.1/?.so'" -e 'assert(require("profiler").statprof)'
fi
if [ -e "$work/prefix/lib/lua/5.1/scriptprof/lua51.so" ] && command -v lua5.1 >/dev/null; then
  # lib/lua/5.1/profiler.so serves LuaJIT and PUC 5.1 alike.
  lua5.1 -e "package.cpath='$work/prefix/lib/lua/5.1/?.so'" -e 'assert(require("profiler").statprof)'
fi
# luaprof --lua finds each Lua's module in the prefix (lib/lua/5.X beside bin/).
for lua in lua5.3 lua5.1; do
  if [ -e "$work/prefix/lib/lua/${lua#lua}/profiler.so" ] && command -v $lua >/dev/null; then
    output_has "main chunk" "$work/prefix/bin/luaprof" --lua $lua --hz 1000 -e "$BUSY_LUA"
  fi
done
if [ -x "$work/prefix/bin/asprof" ]; then
  output_has "Enemy::find_path" "$work/prefix/bin/asprof" --hz 1000 "$src/samples/angelscript/game.as" 20
fi
echo "luaprof, profconv, profdiff, luajitprof, asprof and the modules run from the prefix"

echo "== find_package(scriptprof) after cmake --install"
cmake -S "$src/tests/host" -B "$work/package" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
nice -n 19 cmake --build "$work/package" -j2 >/dev/null
head_of 5 "$work/package/host" "$work/package.tree"
grep -q "game_update (zone)" "$work/package.tree"
"$work/package/host_cpp" >"$work/cpp.out"; head -3 "$work/cpp.out"

echo "== a C-only project: find_package(scriptprof COMPONENTS lua), linked with cc"
cmake -S "$src/tests/host/c_only" -B "$work/c_only" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
nice -n 19 cmake --build "$work/c_only" -j2 >/dev/null
head_of 3 "$work/c_only/host" "$work/c_only.tree"
grep -q "game_update (zone)" "$work/c_only.tree"
# The C++ component in a C project: refused at configure time, saying why.
if cmake -S "$src/tests/host/c_only" -B "$work/c_only_as" -DCMAKE_PREFIX_PATH="$work/prefix" -DWANT_ANGELSCRIPT=ON \
    >"$work/c_only_as.log" 2>&1; then
  echo "FAIL: the angelscript component was found in a C-only project"; exit 1
fi
grep -qE "angelscript component is C\+\+|built without AngelScript" "$work/c_only_as.log"

echo "== pkg-config scriptprof"
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs scriptprof)
# shellcheck disable=SC2086
cc -o "$work/pc-host" "$src/tests/host/host.c" $flags
head_of 5 "$work/pc-host" "$work/pc.tree"
# shellcheck disable=SC2086
c++ -std=c++17 -o "$work/pc-host-cpp" "$src/tests/host/host.cpp" $flags
"$work/pc-host-cpp" >"$work/cpp.out"; head -3 "$work/cpp.out"

echo "== add_subdirectory(scriptprof)"
cmake -S "$src/tests/host" -B "$work/subdir" -DSCRIPTPROF_SOURCE_DIR="$src" >/dev/null
nice -n 19 cmake --build "$work/subdir" -j2 --target host host_cpp >/dev/null
head_of 5 "$work/subdir/host" "$work/subdir.tree"
"$work/subdir/host_cpp" >"$work/cpp.out"; head -3 "$work/cpp.out"
echo "host: all three builds of both hosts ran"
