#!/usr/bin/env bash
# luaprof --serve and luajitprof --serve, and profiler.serve from a script, asked by the real
# `go tool pprof` and by curl as a user would: the split of a 3:1 program within 3 points, the
# index, bad parameters (400 with the reason), a second collection at once (refused), a client
# that sends half a request or leaves mid-answer, a port in use, stopping while a request runs.
# The program's output stays what it is unprofiled.
#   serve_commands.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
script=$src/tests/live/work.lua
export PPROF_TMPDIR=$work  # where go tool pprof keeps what it fetched
fail() { echo "FAIL: $*"; exit 1; }
export LUA_CPATH="$build/lib/?.so;;"
expected=$(lua5.4 "$script" /nonexistent 0 | awk '/^result/ {print $2}')  # one round, unprofiled

# start_server NAME COMMAND...: runs COMMAND in the background (its stop file is $work/NAME.stop)
# and sets $addr to the address it serves at, read from its standard error.
start_server() {
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  server_pid=$!
  for _ in $(seq 100); do
    addr=$(grep -o 'http://[^ ]*/debug/pprof/' "$work/$name.err" 2>/dev/null | head -1 | sed 's|http://||; s|/debug/pprof/||') || true
    [[ -n $addr ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || fail "$* ended before serving: $(cat "$work/$name.err")"
    sleep 0.1
  done
  fail "$* printed no address in 10 s"
}

# finish NAME: stops the program and checks its exit status and result.
finish() {
  touch "$work/$1.stop"
  wait "$server_pid" || fail "$1 exited $?: $(cat "$work/$1.err")"
  grep -q "^result	$expected\$" "$work/$1.out" || fail "$1 printed $(cat "$work/$1.out"), not 'result $expected'"
}

# split NAME URL: hot's share of hot+cold in go tool pprof -top of URL, within 3 points of 75%, or
# within 4 standard errors of the sample count when too few samples were taken for 3 points to be
# a fair test (a sanitizer build on a loaded machine: 1,000 samples have an error of 1.4 points). Every URL
# asks for hz=1000: a millisecond is a sample.
split() {
  local top
  top=$(go tool pprof -top -nodefraction=0 -unit=ms "$2" 2>&1) || fail "go tool pprof $2: $top"
  local verdict
  verdict=$(awk '/ hot(\(int\))? \(/ {h=$1} / cold(\(int\))? \(/ {c=$1}
    END {gsub(/ms/,"",h); gsub(/ms/,"",c); n=h+c; if (n <= 0) exit
         share=100*h/n; tol=4*100*sqrt(0.75*0.25/n); if (tol < 3) tol=3
         printf "%.1f %d %.1f %d", share, n, tol, (share >= 75-tol && share <= 75+tol)}' <<<"$top")
  [[ -n $verdict ]] || fail "$1: no hot or cold in: $top"
  local share samples tolerance ok
  read -r share samples tolerance ok <<<"$verdict"
  echo "$1: hot $share% of hot+cold (truth 75%), $samples samples"
  ((ok)) || fail "$1: hot's share $share% of $samples samples is not within $tolerance points of 75%"
}

# status_of URL: the HTTP status, the body in $work/body.
status_of() { curl -s -o "$work/body" -w '%{http_code}' "$1"; }

echo "== luaprof --serve"
start_server luaprof "$build/bin/luaprof" --serve 127.0.0.1:0 "$script" "$work/luaprof.stop"
base=http://$addr/debug/pprof
[[ $(status_of "$base/") == 200 ]] && grep -q 'href="profile' "$work/body" || fail "the index: $(cat "$work/body")"
split luaprof "$base/profile?seconds=3&hz=1000"
for bad in "seconds=-1" "seconds=abc" "seconds=99999" "hz=0" "hz=1000000" "hz=1.5" "clock=wall" "clock=sun"; do
  code=$(status_of "$base/profile?$bad")
  [[ $code == 400 ]] || fail "profile?$bad answered $code, not 400"
  name=${bad%%=*}
  grep -q "$name" "$work/body" || fail "profile?$bad: the reason does not name $name: $(cat "$work/body")"
done
[[ $(status_of "$base/no-such-page") == 404 ]] || fail "an unknown page is not 404"
echo "bad parameters: 400 with the reason; unknown pages 404"
# One collection at a time: a second gets Go's refusal while the first goes on.
curl -s -o "$work/first.pb.gz" -w '%{http_code}' "$base/profile?seconds=2" >"$work/first.code" &
first=$!
sleep 0.5
[[ $(status_of "$base/profile?seconds=1") == 500 ]] && grep -q "already being collected" "$work/body" ||
  fail "a second collection at once: $(cat "$work/body")"
wait $first
[[ $(cat "$work/first.code") == 200 ]] || fail "the first collection answered $(cat "$work/first.code")"
echo "a second collection at once is refused; the first completes"
# Half a request, held open: the others are still answered, and it is let go.
exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}"
printf 'GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\n' >&3
[[ $(status_of "$base/") == 200 ]] || fail "the index while a client holds half a request"
# A client that leaves before its answer: the program must not get SIGPIPE.
curl -s -m 1 -o /dev/null "$base/profile?seconds=2" || true
sleep 1.5
exec 3>&-
[[ $(status_of "$base/") == 200 ]] || fail "the index after a client left mid-answer"
echo "half a request and a client gone mid-answer: others served, the program goes on"
# The port in use: a clear error before the script runs.
if out=$("$build/bin/luaprof" --serve "$addr" "$script" "$work/never.stop" 2>&1); then fail "a second server on $addr started"; fi
[[ $out == *"cannot serve profiles"*"in use"* ]] || fail "the port in use: $out"
echo "port in use: $out"
# The HTTP library missing or not one: a clear error naming the file, before the script runs.
for lib in "$work/no-such-library.so" "$script"; do
  if out=$(SCRIPTPROF_HTTP_LIBRARY=$lib "$build/bin/luaprof" --serve 127.0.0.1:0 "$script" "$work/never.stop" 2>&1); then
    fail "served without its HTTP library ($lib)"
  fi
  [[ $out == *"cannot serve profiles"*"libscriptprof_httplib.so"*"$lib"* ]] || fail "no HTTP library ($lib): $out"
  echo "no HTTP library: $out"
done
# The live page in headless Chromium: stopped, started from its form's endpoint, drawn with the
# program's functions, reloading; stopped again. A screenshot stays for a person to look at.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -n $chromium ]]; then
  live=http://$addr/debug/scriptprof/
  [[ $(status_of "$live") == 200 ]] && grep -q 'id="rate">stopped' "$work/body" || fail "the live page, stopped: $(head -c 500 "$work/body")"
  [[ $(curl -s -o /dev/null -w '%{http_code}' -X POST -d hz=50 "${live}rate") == 303 ]] || fail "starting from the live page"
  sleep 2.5
  browse() { env -u LD_PRELOAD -u ASAN_OPTIONS timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/chromium" "$@" 2>/dev/null; }
  dom=$(browse --dump-dom "${live}?seconds=2") || fail "chromium could not load the live page"
  [[ $dom == *'class="f"'*"hot ("* ]] || fail "the live page drew no frame of hot: $(head -c 1500 <<<"$dom")"
  [[ $dom == *'id="rate">50 Hz'* && $dom == *'http-equiv="refresh"'* ]] || fail "the live page's rate or reload"
  shot=${SCRIPTPROF_TEST_OUTPUT:-$work}/live_page.png
  browse --window-size=1200,700 --screenshot="$shot" "${live}?seconds=2" >/dev/null || true
  [[ $(head -c 4 "$shot" 2>/dev/null | od -An -c | tr -d ' ') == "211PNG" ]] || fail "no screenshot of the live page"
  [[ $(curl -s -o /dev/null -w '%{http_code}' -X POST -d hz=0 "${live}rate") == 303 ]] || fail "stopping from the live page"
  [[ $(status_of "$live") == 200 ]] && grep -q 'id="rate">stopped' "$work/body" || fail "the live page, stopped again"
  echo "the live page: drawn in Chromium at 50 Hz, started and stopped; screenshot $shot"
fi
finish luaprof

echo "== luaprof --serve --continuous 100: the recent seconds, asked afterwards"
start_server continuous "$build/bin/luaprof" --serve 127.0.0.1:0 --continuous 100 --window 60 "$script" "$work/continuous.stop"
sleep 3
recent=$(go tool pprof -top -nodefraction=0 "http://$addr/debug/scriptprof/recent?seconds=2" 2>&1) || fail "recent: $recent"
[[ $recent == *"hot ("* && $recent == *"cold ("* ]] || fail "the recent seconds lack hot or cold: $recent"
echo "recent: $(grep -o 'Total samples = [^ ]*' <<<"$recent")"
[[ $(status_of "http://$addr/debug/scriptprof/recent?seconds=61") == 400 ]] || fail "recent beyond the window is not 400"
finish continuous
if "$build/bin/luaprof" --continuous 19 "$script" /none 2>"$work/err"; then fail "--continuous without --serve ran"; fi
grep -q "go with --serve" "$work/err" || fail "--continuous without --serve: $(cat "$work/err")"

echo "== luajitprof --serve (JIT on)"
start_server luajitprof "$build/bin/luajitprof" --serve :0 "$script" "$work/luajitprof.stop"
split luajitprof "http://$addr/debug/pprof/profile?seconds=3&hz=1000"
finish luajitprof

# heap NAME PROGRAM: PROGRAM --serve --heap 4096 runs heap_work.lua; go tool pprof reads the
# in-use heap (keeper within 25% of what Lua counts it left: one run's sampling error is about
# 6%; tests/lua/heap_tracking_test.cpp judges the mean of four within 10%, the dropper near 0)
# and the allocations (both).
heap() {
  local name=$1 program=$2
  "$program" --serve 127.0.0.1:0 --heap 4096 "$src/tests/live/heap_work.lua" "$work/$name.stop" >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  server_pid=$!
  for _ in $(seq 100); do grep -q '^kept' "$work/$name.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(grep -o 'http://[^ ]*/debug/pprof/' "$work/$name.err" | head -1 | sed 's|http://||; s|/debug/pprof/||')
  local kept inuse allocs
  kept=$(awk '/^kept/ {print $2}' "$work/$name.out")
  [[ -n $kept && -n $addr ]] || fail "$name: $(cat "$work/$name.err")"
  inuse=$(go tool pprof -top -nodefraction=0 -unit=B -sample_index=inuse_space "http://$addr/debug/pprof/heap" 2>&1) || fail "$name heap: $inuse"
  allocs=$(go tool pprof -top -nodefraction=0 -unit=B "http://$addr/debug/pprof/allocs" 2>&1) || fail "$name allocs: $allocs"
  [[ $allocs == *"Type: alloc_space"* && $allocs == *"keeper ("* && $allocs == *"dropper ("* ]] || fail "$name allocs: $allocs"
  local keeper dropper
  keeper=$(awk '/ keeper \(/ {gsub(/B/,"",$4); print $4}' <<<"$inuse")
  dropper=$(awk '/ dropper \(/ {gsub(/B/,"",$4); print $4}' <<<"$inuse")
  echo "$name heap: keeper ${keeper:-0} B in use, dropper ${dropper:-0} B; Lua counts $kept B kept"
  awk -v k="${keeper:-0}" -v d="${dropper:-0}" -v t="$kept" 'BEGIN {exit !(k > 0.75 * t && k < 1.25 * t && d < 0.05 * t)}' ||
    fail "$name: the in-use heap is not the keeper's: $inuse"
  touch "$work/$name.stop"
  wait "$server_pid" || fail "$name exited $?: $(cat "$work/$name.err")"
  grep -q "^result	1000\$" "$work/$name.out" || fail "$name printed $(cat "$work/$name.out")"
}
echo "== the heap: luaprof and luajitprof --serve --heap 4096"
heap luaprof-heap "$build/bin/luaprof"
heap luajitprof-heap "$build/bin/luajitprof"

echo "== the HTTP library: loaded by the first serve, not by the module"
LD_PRELOAD=${LUA_PRELOAD:-} lua5.4 "$src/tests/live/http_on_demand.lua" || fail "lua5.4: the HTTP library"
if [[ -e $build/lib/luajit/profiler.so && -z ${LUA_PRELOAD:-} ]]; then  # (LuaJIT cannot host an instrumented module)
  LUA_CPATH="$build/lib/luajit/?.so;;" luajit "$src/tests/live/http_on_demand.lua" || fail "luajit: the HTTP library"
fi

echo "== profiler.serve, and stop_serving while a request runs"
# lua5.4 with the module: under the sanitizers its runtime goes first (LUA_PRELOAD, from ctest).
# (Started directly, not through a function: the trap must kill lua5.4 itself.)
LD_PRELOAD=${LUA_PRELOAD:-} lua5.4 "$script" "$work/module.stop" 60 127.0.0.1:0 >"$work/module.out" 2>&1 &
pids+=($!)
server_pid=$!
for _ in $(seq 100); do [[ -s $work/module.stop.addr ]] && break; sleep 0.1; done
addr=$(cat "$work/module.stop.addr")
split module "http://$addr/debug/pprof/profile?seconds=2&hz=1000"
# Slow frames: every 10th round (a frame) is twice as long; a budget of 1.5 times the median
# frame lists them.
curl -s -o "$work/frames.html" "http://$addr/debug/scriptprof/frames?seconds=1&budget_ms=10000&worst=256"
median=$(grep -o '<td>[0-9.]*</td><td>' "$work/frames.html" | grep -o '[0-9.]*' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}')
[[ -n $median ]] || fail "the frames page lists no frame: $(head -c 800 "$work/frames.html")"
budget=$(awk -v m="$median" 'BEGIN {print m * 1.5}')
curl -s -o "$work/frames.html" "http://$addr/debug/scriptprof/frames?seconds=2&budget_ms=$budget&worst=0"
over=$(grep -c '<td>yes</td>' "$work/frames.html" || true)
((over >= 2)) || fail "fewer than 2 frames over $budget ms: $(head -c 1500 "$work/frames.html")"
frame=$(curl -s "http://$addr/debug/scriptprof/frame?id=0")
[[ $frame == *"hot ("* ]] || fail "the slowest frame's flame graph lacks hot: $(head -c 500 <<<"$frame")"
echo "slow frames: median frame $median ms; $over frames over $budget ms in 2 s, each with its flame graph"
curl -s -o "$work/body" -w '%{http_code}' "http://$addr/debug/pprof/profile?seconds=30" >"$work/long.code" &
long=$!
sleep 1
start=$(date +%s)
touch "$work/module.stop.stop_serving"
wait $long
[[ $(cat "$work/long.code") == 503 ]] || fail "a request when serving stopped answered $(cat "$work/long.code")"
(($(date +%s) - start <= 5)) || fail "the request took $(($(date +%s) - start)) s to end after stop_serving"
echo "stop_serving ended a 30 s request at once: $(cat "$work/body")"
finish module
grep -q "stopped serving" "$work/module.out" || fail "the script did not stop serving"
echo "== asprof --serve (AngelScript)"
if [[ -x $build/bin/asprof ]]; then
  start_server asprof "$build/bin/asprof" --serve :0 "$src/tests/live/work.as" 2000
  split asprof "http://$addr/debug/pprof/profile?seconds=2&hz=1000"
  # No heap asked: the page says how to ask. AngelScript's memory functions see frees on any
  # thread: asking is refused, naming the runtime.
  [[ $(status_of "http://$addr/debug/pprof/heap") == 404 ]] && grep -q -- "--heap" "$work/body" ||
    fail "asprof's heap: $(cat "$work/body")"
  wait "$server_pid" || fail "asprof exited $?: $(cat "$work/asprof.err")"
  grep -q "^result 1199998\$" "$work/asprof.out" || fail "asprof printed $(cat "$work/asprof.out")"
  if out=$("$build/bin/asprof" --serve :0 --heap 4096 "$src/tests/live/work.as" 10 2>&1); then fail "asprof --heap served"; fi
  [[ $out == *"AngelScript"*"does not report every free"* ]] || fail "asprof --heap: $out"
  echo "asprof: no heap unless asked; asking is refused: $out"
fi

echo "== a C host (scriptprof_serve): two threads with a state each, one request"
if [[ -x $build/bin/served_host ]]; then
  start_server host "$build/bin/served_host" 127.0.0.1:0 "$work/host.stop"
  split host "http://$addr/debug/pprof/profile?seconds=2&hz=1000"
  tags=$(go tool pprof -tags "http://$addr/debug/pprof/profile?seconds=1" 2>&1)
  [[ $tags == *"worker 1"* && $tags == *"worker 2"* ]] || fail "the host's threads are not labelled: $tags"
  echo "both threads labelled: $(grep -c 'worker' <<<"$tags") thread labels"
  touch "$work/host.stop"
  wait "$server_pid" || fail "served_host exited $?: $(cat "$work/host.err")"
  [[ $(grep -c "result $expected\$" "$work/host.out") == 2 ]] || fail "served_host printed $(cat "$work/host.out")"
fi
echo "every served program printed its unprofiled result"
