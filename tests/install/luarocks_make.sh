#!/usr/bin/env bash
# `luarocks make` as a Lua user runs it in the checkout ($1), into a temporary tree: the module
# loads in lua5.4 from the tree's cpath and profiles, and the tree's luaprof runs a script.
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
