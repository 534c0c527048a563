#!/usr/bin/env bash
# The Debian package as a user would get it: packaging/deb.sh builds it (in BUILD_DIR-deb), it is
# unpacked into a scratch root (dpkg -x, as dpkg would install it), and from there luaprof runs
# a script, each Lua's interpreter loads the module from where the package put it (the folder
# Debian's Lua searches, moved under the root), luaprof --lua finds them, and a C host builds
# against the headers through pkg-config and through a C-only CMake project.
#   deb_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/lib/output_checks.sh"
# Builds in a test run niced: the tests beside it on the machine's cores measure time. Beside
# the build folder, at its depth: with a compiler cache (./run.sh test) every object but the
# few that differ for /usr comes from the build's, whose paths relative to the checkout match.
deb=$(nice -n 19 "$src/packaging/deb.sh" "$build-deb" | tail -1)
echo "== $(basename "$deb"): $(du -h "$deb" | cut -f1)"
dpkg-deb -f "$deb" Package Version Depends
dpkg -x "$deb" "$work/root"
usr=$work/root/usr
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
lualib=$usr/lib/$multiarch/lua

echo "== the tools"
cat >"$work/work.lua" <<'LUA'
local function hot() local x = 0 for i = 1, 1e5 do x = x + i end return x end
local t = os.clock() repeat hot() until os.clock() - t > 0.1 -- long enough for LuaJIT too
print(hot())
LUA
output_has "hot (" "$usr/bin/luaprof" --hz 1000 -o "$work/run.folded" "$work/work.lua"
output_has "hot (" "$usr/bin/profconv" "$work/run.folded"
"$usr/bin/luaprof" --version
output_has "serving profiles at" "$usr/bin/luaprof" --serve 127.0.0.1:0 -e "$BUSY_LUA"  # finds its HTTP library
if [ -x "$usr/bin/luajitprof" ]; then "$usr/bin/luajitprof" --version; fi

echo "== each Lua loads its module from the package's folder (Debian's own search path, under the root)"
for lua in lua5.1 lua5.2 lua5.3 lua5.4 luajit; do
  command -v $lua >/dev/null || continue
  v=$($lua -e 'print((_VERSION:gsub("Lua ", "")))')
  # Debian's interpreter searches /usr/lib/<multiarch>/lua/$v: the same path under the root.
  $lua -e "assert(package.cpath:find('/usr/lib/$multiarch/lua/$v/?.so', 1, true), 'not where $lua looks')" \
       -e "package.cpath = '$lualib/$v/?.so'" \
       -e 'local p = require "profiler"; p.statprof(function() local x = 0 for i = 1, 1e6 do x = x + i end end, {hz = 1000, display = false}); assert(p.sample_count() >= 0)'
  echo "$lua: the module from lib/$multiarch/lua/$v"
  if [ "$lua" = lua5.4 ] || [ "$lua" = luajit ]; then  # serving: the HTTP library found from the module's folder
    output_has "served at" $lua -e "package.cpath = '$lualib/$v/?.so'" -e "$SERVE_LUA"
  fi
  output_has "hot (" "$usr/bin/luaprof" --lua $lua --hz 1000 "$work/work.lua"
done

echo "== a C host: pkg-config, and a C-only CMake project"
flags=$(PKG_CONFIG_PATH="$usr/lib/$multiarch/pkgconfig" pkg-config --cflags --libs scriptprof)
# shellcheck disable=SC2086
cc -o "$work/pc-host" "$src/tests/host/host.c" $flags
head_of 3 "$work/pc-host" "$work/pc.tree"
cmake -S "$src/tests/host/c_only" -B "$work/c_only" -DCMAKE_PREFIX_PATH="$usr" >/dev/null
nice -n 19 cmake --build "$work/c_only" -j2 >/dev/null
head_of 3 "$work/c_only/host" "$work/c_only.tree"
grep -q "game_update (zone)" "$work/c_only.tree"
echo "the package's tools, modules and development files work from its files"
