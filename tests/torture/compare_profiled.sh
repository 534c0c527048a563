#!/usr/bin/env bash
# Each torture script named runs plain and with the profiler started (10 kHz CPU, 10 kHz wall,
# call counting) in the interpreter LUA (the module on its LUA_CPATH): output and exit status
# must be the same. Run from tests/torture; prints a FAIL block per difference and exits 1 if any.
#   compare_profiled.sh LUA NAME SCRIPT...      (NAME labels the messages: "Lua 5.3")
set -u
lua=$1 name=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failures=0
for script in "$@"; do
  "$lua" "$script" >"$out/plain" 2>&1; echo "exit $?" >>"$out/plain"
  sed -i 's/0x[0-9a-f]*/0x?/g' "$out/plain"
  for opts in "hz = 10000" "hz = 10000, clock = 'wall'" "hz = 10000, count_calls = true"; do
    "$lua" -e "require('profiler').start_profiler{$opts}" "$script" >"$out/profiled" 2>&1; echo "exit $?" >>"$out/profiled"
    sed -i 's/0x[0-9a-f]*/0x?/g' "$out/profiled"
    if ! cmp -s "$out/plain" "$out/profiled"; then
      failures=$((failures + 1))
      echo "FAIL $name, $script with {$opts}:"
      diff "$out/plain" "$out/profiled" | head -20
    fi
  done
done
echo "$name: $failures differences"
((failures == 0))
