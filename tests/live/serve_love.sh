#!/usr/bin/env bash
# A LÖVE game (samples/love, LuaJIT with the JIT on) started with the endpoint, under xvfb, asked
# by go tool pprof while it runs: the game's functions are there, the JIT's share is labelled,
# and the game ends as it should when asked to quit.
#   serve_love.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'touch "$work/quit"; sleep 1; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [[ -f $work/love.log ]] && cat "$work/love.log"; exit 1; }
export PPROF_TMPDIR=$work
SCRIPTPROF_LUAJIT_CPATH="$build/lib/luajit/?.so" SCRIPTPROF_LOVE_SERVE=127.0.0.1:0 SCRIPTPROF_LOVE_FRAMES=1000000 \
  SCRIPTPROF_LOVE_QUIT="$work/quit" SCRIPTPROF_LOVE_CLOCK=cpu timeout 120 xvfb-run -a love "$src/samples/love" \
  >"$work/love.log" 2>&1 &
game=$!
addr=
for _ in $(seq 300); do
  addr=$(grep -o 'http://[^ ]*/debug/pprof/' "$work/love.log" 2>/dev/null | head -1) || true
  [[ -n $addr ]] && break
  kill -0 $game 2>/dev/null || fail "the game ended before serving"
  sleep 0.1
done
[[ -n $addr ]] || fail "the game printed no address in 30 s"
top=$(go tool pprof -top -nodefraction=0 "${addr}profile?seconds=3&hz=1000" 2>&1) || fail "go tool pprof: $top"
for fn in "update (main.lua" "draw (main.lua" "collide (main.lua"; do
  [[ $top == *"$fn"* ]] || fail "no '$fn' in the served profile: $top"
done
tags=$(go tool pprof -tags "${addr}profile?seconds=1&hz=1000" 2>&1) || fail "go tool pprof -tags: $tags"
[[ $tags == *"jit:"*"compiled"* ]] || fail "the JIT's share is not labelled (JIT off?): $tags"
echo "the served game's profile (CPU clock, 3 s at 1 kHz):"
grep -E "Duration|update \(|draw \(|collide \(" <<<"$top"
grep -A3 "jit:" <<<"$tags"
touch "$work/quit"
wait $game || fail "the game exited $?"
grep -q "stopped serving after" "$work/love.log" || fail "the game did not stop serving at quit"
echo "the game quit and stopped serving"
