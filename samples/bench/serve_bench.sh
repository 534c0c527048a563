#!/usr/bin/env bash
# What a served program pays: samples/bench/serve_bench.sh BUILD_DIR [--quick] [rounds]
# Each program of samples/bench/programs runs under lua5.4 plain, with the profiler attached and
# suspended (what any served run costs before its server: the hooks and wrappers of the Lua
# adapter), served by the module (profiler.serve, an idle server: no request), served with the
# in-use heap kept (heap = true: every allocation and free seen), then in continuous mode at 19
# and at 100 Hz.
# Rounds are interleaved; the ratio is the median of the rounds' CPU seconds of the whole
# process (the server's threads included) to the plain run's, with the rounds' spread. Goals
# (issue: live profiling): idle about 1.00, continuous 100 Hz at most 1.01.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: serve_bench.sh BUILD_DIR [--quick] [rounds]}" && pwd)
shift
quick=0
[ "${1:-}" = "--quick" ] && { quick=1; shift; }
rounds=${1:-$((quick ? 1 : 5))}
if [ ! -f "$build/lib/profiler.so" ] || ! LUA_CPATH="$build/lib/?.so" lua5.4 -e 'assert(require("profiler").serve)' 2>/dev/null; then
  echo "serve bench: the module has no profile server (libcpp-httplib-dev); skipped"
  exit 0
fi
export LUA_CPATH="$build/lib/?.so;;"
declare -A arg=([numeric]=600000 [coroutines]=6000000 [trees]=15)
((quick)) && arg=([numeric]=100000 [coroutines]=1000000 [trees]=12)
configs=(plain attached idle heap c19 c100)
serve_chunk() {  # the -e chunk that serves, per configuration
  case $1 in
    attached) echo 'require("profiler").start_profiler{start_sampling = false}' ;;
    idle) echo 'require("profiler").serve{address = "127.0.0.1:0"}' ;;
    heap) echo 'require("profiler").serve{address = "127.0.0.1:0", heap = true}' ;;
    c19) echo 'require("profiler").serve{address = "127.0.0.1:0", continuous = 19}' ;;
    c100) echo 'require("profiler").serve{address = "127.0.0.1:0", continuous = 100}' ;;
  esac
}
cpu_seconds() {  # cpu_seconds PROGRAM CONFIG: user+system seconds of one run
  local program=$1 config=$2 out
  if [ "$config" = plain ]; then
    out=$( { /usr/bin/time -f "%U %S" lua5.4 "$here/programs/$program.lua" "${arg[$program]}" >/dev/null; } 2>&1 )
  else
    out=$( { /usr/bin/time -f "%U %S" lua5.4 -e "$(serve_chunk "$config")" "$here/programs/$program.lua" "${arg[$program]}" >/dev/null; } 2>&1 )
  fi
  awk '{printf "%.3f", $1 + $2}' <<<"$(tail -1 <<<"$out")"
}
echo "== serve bench: CPU seconds of the whole process against plain lua5.4, median of $rounds interleaved rounds"
printf "%-12s %10s %18s %18s %18s %18s %18s\n" program "plain (s)" "attached, paused" "idle server" \
  "idle, heap kept" "continuous 19 Hz" "continuous 100 Hz"
worst100=0
for program in numeric coroutines trees; do
  declare -A times=()
  for ((r = 0; r < rounds; r++)); do
    for c in "${configs[@]}"; do times[$c]+="$(cpu_seconds $program $c) "; done
  done
  line=$(python3 - "$program" "${times[plain]}" "${times[attached]}" "${times[idle]}" "${times[heap]}" "${times[c19]}" "${times[c100]}" <<'PY'
import sys, statistics
name, plain = sys.argv[1], [float(x) for x in sys.argv[2].split()]
base = statistics.median(plain)
cells = []
worst = 0.0
for i, col in enumerate(sys.argv[3:]):
    ratios = [float(x) / p for x, p in zip(col.split(), plain)]
    med = statistics.median([float(x) for x in col.split()]) / base
    cells.append(f"{med:.3f} [{min(ratios):.2f}-{max(ratios):.2f}]")
    if i == 4: worst = med
print(f"{name:<12} {base:10.3f} " + " ".join(f"{c:>18}" for c in cells) + f" {worst:.4f}")
PY
)
  echo "${line% *}"
  worst100=$(python3 -c "print(max($worst100, ${line##* }))")
done
verdict=$(python3 -c "print('met' if $worst100 <= 1.01 else 'not met')")
echo "continuous 100 Hz, worst program: $worst100 (goal <= 1.01: $verdict; the attached column is the"
echo "  Lua adapter's own cost when no tick comes, which the overhead issue works on)"
