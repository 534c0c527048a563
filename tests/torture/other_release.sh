#!/usr/bin/env bash
# A Lua release Debian does not ship, with the module built for it: each torture script prints
# and exits the same with the profiler started (10 kHz CPU, 10 kHz wall, call counting) as
# without, and the layout of Lua's structs that the sampler reads is recognised as the release's
# (health().internals). A 5.4 release gets the build's own 5.4 module; another minor release
# (5.5) a module built against its headers (SCRIPTPROF_LUA_PREFIX) in BUILD/module-VERSION, and
# the 5.4 module is refused there by name. With `scripts`, the test scripts of tests/lua that
# every release runs also pass under it.
#   tests/torture/other_release.sh BUILD VERSION [scripts]
# The release is built by ../shared/lua/build.sh into BUILD/lua-VERSION once; without that
# script (a checkout alone) the test is skipped (exit 77).
set -u
build=$(cd "$1" && pwd) version=$2
here=$(cd "$(dirname "$0")" && pwd)
builder=$here/../../../shared/lua/build.sh
[[ -x $builder ]] || { echo "SKIP: no $builder"; exit 77; }
lua=$build/lua-$version/bin/lua
if [[ ! -x $lua ]]; then
  # (Builds niced: the tests beside this one on the machine's cores measure time.)
  nice -n 19 "$builder" "$version" "$build/lua-$version" >"$build/lua-$version.log" 2>&1 ||
    { echo "FAIL: cannot build Lua $version (see $build/lua-$version.log)"; exit 1; }
fi
failures=0
export LUA_CPATH="$build/lib/?.so;;"
if [[ $version != 5.4.* ]]; then
  # Not a 5.4: the 5.4 module is refused at require, naming the Lua it is.
  want="profiler: this module is built for Lua 5.4 (5.4.0-5.4.8), and this is Lua ${version%.*}: build"
  got=$("$lua" -e 'local ok, e = pcall(require, "profiler") print(ok, e)' 2>&1)
  if [[ $got != "false	$want"* ]]; then
    failures=$((failures + 1))
    echo "FAIL: Lua $version: '$got', expected false and '$want...'"
  fi
  # Its own module, from the same sources against its headers (configured once, then brought
  # up to date: make's own checks).
  module=$build/module-$version
  if [[ ! -f $module/CMakeCache.txt ]]; then
    cmake -S "$here/../.." -B "$module" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCRIPTPROF_LUA_PREFIX="$build/lua-$version" \
      -DSCRIPTPROF_TESTS=OFF -DSCRIPTPROF_SAMPLES=OFF -DSCRIPTPROF_LUAJIT=OFF -DSCRIPTPROF_ANGELSCRIPT=OFF \
      -DSCRIPTPROF_OTHER_LUA_MODULES=OFF >"$module.log" 2>&1 ||
      { echo "FAIL: cannot configure the module for Lua $version (see $module.log)"; exit 1; }
  fi
  nice -n 19 cmake --build "$module" --target profiler -j "$(nproc)" >>"$module.log" 2>&1 ||
    { echo "FAIL: cannot build the module for Lua $version (see $module.log)"; exit 1; }
  export LUA_CPATH="$module/lib/?.so;;"
fi
cd "$here"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
# The layout of Lua's private structs is recognised as this release's (not the public API only).
case $version in 5.4.0 | 5.4.1 | 5.4.2 | 5.5.*) want="Lua $version" ;; *) want="Lua 5.4.3-5.4.8" ;; esac
got=$("$lua" -e 'local p = require "profiler"; p.start_profiler{}; p.stop_profiler(); print(p.health().internals)' 2>&1)
if [[ $got != "$want" ]]; then
  failures=$((failures + 1))
  echo "FAIL Lua $version: internals '$got', expected '$want'"
fi
# With the reads turned off, the public API alone serves the same checks, and says so.
if ! (cd "$here/../lua" && SCRIPTPROF_LUA_INTERNALS=off "$lua" test_every_lua.lua >"$out/api_only" 2>&1); then
  failures=$((failures + 1))
  echo "FAIL Lua $version, test_every_lua.lua with SCRIPTPROF_LUA_INTERNALS=off:"
  grep -A3 FAIL "$out/api_only" | head -20
fi
"$here/compare_profiled.sh" "$lua" "Lua $version" coroutines.lua errors.lua close.lua values.lua hooks.lua ||
  failures=$((failures + 1))
# The test scripts every release runs (test_rate's workload is sized for 5.4's speed).
if [[ ${3:-} == scripts ]]; then
  cd "$here/../lua"
  # 5.4.0 and 5.4.1 run Lua calls on the C stack: test_deep's 20,000 levels overflow it unprofiled.
  deep=deep
  [[ $version == 5.4.[01] ]] && deep=""
  for name in api attribution calls controls coroutines $deep errors every_lua long_c program_hooks round_trips \
    signal_option space split units; do
    if ! LUA54=$lua "$lua" "test_$name.lua" >"$out/script" 2>&1; then
      failures=$((failures + 1))
      echo "FAIL Lua $version, test_$name.lua:"
      grep -A3 FAIL "$out/script" | head -20
    fi
  done
fi
echo "Lua $version: $failures failures"
((failures == 0))
