#!/usr/bin/env bash
# The whole bench: samples/bench/bench.sh BUILD_DIR [--quick] [rounds]
# (./run.sh bench builds first and calls this). Under 10 minutes on a 2-core machine;
# --quick, under a minute, runs every configuration once and fails on an insane result.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: bench.sh BUILD_DIR [--quick] [rounds]}" && pwd)
shift
quick=""
[ "${1:-}" = "--quick" ] && quick="--quick"
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
"$build/bin/scriptprof_timer_floor" $quick
echo
"$build/bin/scriptprof_format_bench" $quick
echo
"$build/bin/scriptprof_call_counting_bench" $quick
# The same cost in instructions, which this machine's noise cannot move (fib(25): 242,785 calls).
if [ -z "$quick" ] && command -v valgrind >/dev/null; then
  refs() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/bin/scriptprof_call_counting_bench" --single "$1" 2>&1 |
      sed -n 's/.*refs: *//p' | tr -d ,
  }
  plain=$(refs plain) bare=$(refs bare) count=$(refs count)
  echo "instructions per call (callgrind): bare call hook $(( (bare - plain) / 242785 )), counting $(( (count - bare) / 242785 )) more"
fi
echo
lua5.4 -e "package.cpath='$build/lib/?.so;'..package.cpath" "$here/memory_growth.lua" $quick
echo
lua5.4 -e "package.cpath='$build/lib/?.so;'..package.cpath" "$here/bench.lua" "$@"
lua5.4 "$here/luajit_rows.lua" "$build" $quick
echo
"$here/serve_bench.sh" "$build" $quick
echo
# The overhead issue's goals on programs of six kinds (the public ones too, when they are beside
# the project, as on the development machines).
public=()
[ -z "$quick" ] && [ -d "$here/../../../shared/bench-programs" ] && public=(--public "$here/../../../shared/bench-programs")
python3 "$here/suite_bench.py" "$build" $quick "${public[@]}" --rounds "${SUITE_ROUNDS:-$([ -n "$quick" ] && echo 1 || echo 3)}"
echo
if [ -x "$build/bin/scriptprof_angelscript_bench" ]; then
  "$build/bin/scriptprof_angelscript_bench" $quick
else
  echo "scriptprof_angelscript_bench was not built (AngelScript missing); skipped"
fi
