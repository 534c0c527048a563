#!/usr/bin/env bash
# The 5.1 ABI's one module (build/lib/lua/5.1/profiler.so) serves LuaJIT and PUC Lua 5.1: each
# gets its own build (each refuses the other's interpreter; PUC 5.1's reads 5.1's structs), and a
# loader left without its modules says which interpreter it found and what it could not load.
#   abi51_loader.sh BUILD_DIR
set -u
dir=$1/lib/lua/5.1
failed=0
checked=0
check() {  # check WHAT OUTPUT PATTERN
  checked=$((checked + 1))
  if [[ $2 == *$3* ]]; then echo "PASS $1"; else echo "FAIL $1: expected '$3' in: $2"; failed=1; fi
}
profile='local p = require("profiler")
p.statprof(function() local x = 0 for i = 1, 3e6 do x = x + i % 7 end end, {hz = 1000, display = false})
print("profiled; internals: " .. tostring(p.health().internals))'
if command -v luajit >/dev/null && [ -e "$dir/scriptprof/luajit.so" ]; then
  check "luajit gets LuaJIT's module" "$(luajit -e "package.cpath='$dir/?.so'" -e "$profile" 2>&1)" "profiled; internals: nil"
fi
if command -v lua5.1 >/dev/null && [ -e "$dir/scriptprof/lua51.so" ]; then
  check "lua5.1 gets PUC 5.1's module" "$(lua5.1 -e "package.cpath='$dir/?.so'" -e "$profile" 2>&1)" "profiled; internals: Lua 5.1"
fi
lone=$(mktemp -d); trap 'rm -rf "$lone"' EXIT
cp "$dir/profiler.so" "$lone/"
for lua in luajit lua5.1; do
  command -v $lua >/dev/null || continue
  name=$([ $lua = luajit ] && echo LuaJIT || echo "Lua 5.1")
  file=$([ $lua = luajit ] && echo luajit.so || echo lua51.so)
  check "$lua without its module" "$($lua -e "package.cpath='$lone/?.so'" -e 'print(pcall(require, "profiler"))' 2>&1)" \
    "false	profiler: this is $name, and its module did not load: $lone/scriptprof/$file"
done
((checked > 0)) || { echo "SKIP: neither luajit nor lua5.1 with its module"; exit 77; }
exit $failed
