#!/usr/bin/env bash
# `luarocks make` as a Lua user runs it in the checkout ($1), into a temporary tree: the module
# loads in lua5.4 from the tree's cpath and profiles, and the tree's luaprof runs a script; the
# same for Lua 5.3's module when luarocks can target 5.3.
set -euo pipefail
src=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cd "$src"
luarocks --lua-version 5.4 make --tree "$tree" scriptprof-scm-1.rockspec >"$tree.log" 2>&1 || { cat "$tree.log"; exit 1; }
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
"$tree/bin/luaprof" --hz 1000 -e 'local x = 0 for i = 1, 3e6 do x = x + i end' | grep -q "main chunk"
echo "luaprof from the rock tree: ok"
luarocks --lua-version 5.4 --tree "$tree" remove scriptprof >/dev/null
[ ! -e "$tree/lib/lua/5.4/profiler.so" ] && echo "luarocks remove: the module is gone"

# For another Lua luarocks targets (5.3 when Debian's is installed): its module, built against
# the headers luarocks names, is the one installed, and it profiles in that Lua.
if command -v lua5.3 >/dev/null && [ -e /usr/include/lua5.3/lua.h ]; then
  tree53=$(mktemp -d)
  trap 'rm -rf "$tree" "$tree53"' EXIT
  luarocks --lua-version 5.3 make --tree "$tree53" scriptprof-scm-1.rockspec >"$tree53.log" 2>&1 || { cat "$tree53.log"; exit 1; }
  rm -f "$tree53.log"
  eval "$(luarocks --lua-version 5.3 --tree "$tree53" path)"
  lua5.3 -e '
    local profiler = require "profiler"
    profiler.statprof(function() local x = 0 for i = 1, 3e6 do x = x + i % 7 end return x end, {hz = 1000, display = false})
    local internals = profiler.health().internals
    assert(profiler.sample_count() > 0 and internals == "Lua 5.3", internals)
    print("require \"profiler\" from the 5.3 rock tree: ok (" .. internals .. ")")'
fi
