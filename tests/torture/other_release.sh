#!/usr/bin/env bash
# The Lua 5.4 module in another 5.4 release's interpreter: each torture script prints and exits
# the same with the profiler started (10 kHz CPU, 10 kHz wall, call counting) as without. In a
# release that is not 5.4 (5.5.0), require refuses with a message naming it. The layout of
# Lua's structs that the sampler reads is recognised as the release's (health().internals).
#   tests/torture/other_release.sh BUILD VERSION
# The release is built by ../shared/lua/build.sh into BUILD/lua-VERSION once; without that
# script (a checkout alone) the test is skipped (exit 77).
set -u
build=$(cd "$1" && pwd) version=$2
here=$(cd "$(dirname "$0")" && pwd)
builder=$here/../../../shared/lua/build.sh
[[ -x $builder ]] || { echo "SKIP: no $builder"; exit 77; }
lua=$build/lua-$version/bin/lua
if [[ ! -x $lua ]]; then
  "$builder" "$version" "$build/lua-$version" >"$build/lua-$version.log" 2>&1 ||
    { echo "FAIL: cannot build Lua $version (see $build/lua-$version.log)"; exit 1; }
fi
export LUA_CPATH="$build/lib/?.so;;"
if [[ $version != 5.4.* ]]; then
  # Not a 5.4: refused at require, naming the Lua it is and the releases the module serves.
  want="profiler: this module is built for Lua 5.4 (5.4.0-5.4.8), and this is Lua ${version%.*}: build"
  got=$("$lua" -e 'local ok, e = pcall(require, "profiler") print(ok, e)' 2>&1)
  [[ $got == "false	$want"* ]] && { echo "PASS: Lua $version: $got"; exit 0; }
  echo "FAIL: Lua $version: '$got', expected false and '$want...'"; exit 1
fi
cd "$here"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
failures=0
# The layout of Lua's private structs is recognised as this release's (not the public API only).
case $version in 5.4.0 | 5.4.1 | 5.4.2) want="Lua $version" ;; *) want="Lua 5.4.3-5.4.8" ;; esac
got=$("$lua" -e 'local p = require "profiler"; p.start_profiler{}; p.stop_profiler(); print(p.health().internals)' 2>&1)
if [[ $got != "$want" ]]; then
  failures=$((failures + 1))
  echo "FAIL Lua $version: internals '$got', expected '$want'"
fi
for script in coroutines.lua errors.lua close.lua values.lua hooks.lua; do
  "$lua" "$script" >"$out/plain" 2>&1; echo "exit $?" >>"$out/plain"
  sed -i 's/0x[0-9a-f]*/0x?/g' "$out/plain"
  for opts in "hz = 10000" "hz = 10000, clock = 'wall'" "hz = 10000, count_calls = true"; do
    "$lua" -e "require('profiler').start_profiler{$opts}" "$script" >"$out/profiled" 2>&1; echo "exit $?" >>"$out/profiled"
    sed -i 's/0x[0-9a-f]*/0x?/g' "$out/profiled"
    if ! cmp -s "$out/plain" "$out/profiled"; then
      failures=$((failures + 1))
      echo "FAIL Lua $version, $script with {$opts}:"
      diff "$out/plain" "$out/profiled" | head -20
    fi
  done
done
echo "Lua $version: $failures failures"
((failures == 0))
