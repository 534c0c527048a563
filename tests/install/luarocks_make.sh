#!/usr/bin/env bash
# `luarocks make` as a Lua user runs it in the checkout ($1), into a temporary tree: the module
# loads in lua5.4 from the tree's cpath and profiles, and the tree's luaprof runs a script; then
# as typed (Lua 5.1 on Debian), and for 5.3 with SCRIPTPROF_ROCKS_ALL=1.
# (Its builds run niced: the tests beside it on the machine's cores measure time. Each is a cold
# build of the project, ~3 min of one core here: on one job it took more than the test's 15 min
# once beside a busy neighbour, so it takes whatever core is idle.)
set -euo pipefail
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
src=$1
source "$src/tests/lib/output_checks.sh"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cd "$src"
nice -n 19 luarocks --lua-version 5.4 make --tree "$tree" scriptprof-scm-1.rockspec >"$tree.log" 2>&1 || { cat "$tree.log"; exit 1; }
rm -f "$tree.log"
eval "$(luarocks --lua-version 5.4 --tree "$tree" path)"
lua5.4 -e '
  local profiler = require "profiler"
  local function spin() local x = 0 for i = 1, 3e6 do x = x + i % 7 end return x end
  local out = os.tmpname()
  profiler.statprof(spin, { hz = 1000, file = out })
  local text = io.open(out):read("a")
  os.remove(out)
  assert(text:find("(command line):3)", 1, true) and text:find("Sample count: %d+"), text)
  print("require \"profiler\" from the rock tree: ok")'
output_has "served at" lua5.4 -e "$SERVE_LUA"  # the HTTP library, deployed beside the module
output_has "main chunk" "$tree/bin/luaprof" --hz 1000 -e "$BUSY_LUA"
echo "luaprof from the rock tree: ok"
output_has "serving profiles at" "$tree/bin/luaprof" --serve 127.0.0.1:0 -e "$BUSY_LUA"
echo "luaprof --serve from the rock tree: ok"
luarocks --lua-version 5.4 --tree "$tree" remove scriptprof >/dev/null
[ ! -e "$tree/lib/lua/5.4/profiler.so" ] && echo "luarocks remove: the module is gone"

# `luarocks make` as typed (Debian's luarocks targets Lua 5.1 unless told), and for 5.3: the
# module built against the headers luarocks names is the one installed, and it profiles in the
# interpreter luarocks names, its layout recognised where the module has one.
rock_for() {  # rock_for [--lua-version V] EXPECTED_INTERNALS
  local internals=${@: -1} args=("${@:1:$#-1}")
  local t
  t=$(mktemp -d)
  trees+=("$t")
  nice -n 19 luarocks "${args[@]}" make --tree "$t" scriptprof-scm-1.rockspec >"$t.log" 2>&1 || { cat "$t.log"; exit 1; }
  rm -f "$t.log"
  local lua
  lua=$(luarocks "${args[@]}" config lua_interpreter)
  eval "$(luarocks "${args[@]}" --tree "$t" path)"
  "$lua" -e "
    local profiler = require 'profiler'
    profiler.statprof(function() local x = 0 for i = 1, 3e6 do x = x + i % 7 end return x end, {hz = 1000, display = false})
    local internals = profiler.health().internals
    assert(profiler.sample_count() > 0 and internals == '$internals', internals)
    print('require \"profiler\" from the ' .. _VERSION .. ' rock tree ($lua): ok (' .. internals .. ')')"
}
trees=()
trap 'rm -rf "$tree" "${trees[@]}"' EXIT
rock_for "Lua 5.1"  # as typed: Lua 5.1
# Another rock (5.3) rebuilds an adapter, 1.5 minutes of CI for the same path: on request
# (SCRIPTPROF_ROCKS_ALL=1).
if [ -n "${SCRIPTPROF_ROCKS_ALL:-}" ] && command -v lua5.3 >/dev/null && [ -e /usr/include/lua5.3/lua.h ]; then
  rock_for --lua-version 5.3 "Lua 5.3"
fi
