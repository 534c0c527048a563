#!/usr/bin/env bash
# A frame's split against the thread's CPU clock, the way a game developer reads it: the frame
# loop of frame_loop.lua under LuaJIT (JIT on) and Lua 5.4, and the LÖVE sample (samples/love,
# headless, when love and xvfb-run are installed), each on the CPU and the wall clock at 1 kHz
# and 10 kHz, with about 10,000 samples a line (a point's sampling error is about 0.4).
#   samples/bench/frame_truth.sh BUILD_DIR [--quick]     (--quick: a tenth of the frames)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: frame_truth.sh BUILD_DIR [--quick]}" && pwd)
scale=1
[ "${2:-}" = "--quick" ] && scale=10
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Lua 5.4 has no sleep and no thread CPU clock of its own: a C module gives both.
cat >"$work/frame_clock.c" <<'C'
#include <errno.h>
#include <lauxlib.h>
#include <time.h>
static int nap(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  struct timespec req = {(time_t)s, (long)((s - (time_t)s) * 1e9)}, rem;
  while (nanosleep(&req, &rem) != 0 && errno == EINTR) req = rem;
  return 0;
}
static int thread_cpu(lua_State *L) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  lua_pushnumber(L, (lua_Number)t.tv_sec + (lua_Number)t.tv_nsec * 1e-9);
  return 1;
}
int luaopen_frame_clock(lua_State *L) {
  luaL_Reg f[] = {{"nap", nap}, {"thread_cpu", thread_cpu}, {NULL, NULL}};
  luaL_newlib(L, f);
  return 1;
}
C
cc -O2 -shared -fPIC $(pkg-config --cflags lua5.4) "$work/frame_clock.c" -o "$work/frame_clock.so"
for clock in cpu wall; do
  for hz in 1000 10000; do
    frames=$(( (hz == 1000 ? 8000 : 800) / scale ))
    LUA_CPATH="$build/lib/luajit/?.so;;" luajit "$here/frame_loop.lua" $clock $hz $frames
    LUA_CPATH="$build/lib/?.so;$work/?.so;;" lua5.4 "$here/frame_loop.lua" $clock $hz $frames
    if command -v love >/dev/null && command -v xvfb-run >/dev/null; then
      frames=$(( (hz == 1000 ? 17000 : 1500) / scale ))
      share=$(SCRIPTPROF_LUAJIT_CPATH="$build/lib/luajit/?.so" SCRIPTPROF_LOVE_OUT="$work/love.json" SCRIPTPROF_LOVE_FRAMES=$frames \
        SCRIPTPROF_LOVE_CLOCK=$clock SCRIPTPROF_LOVE_HZ=$hz xvfb-run -a love "$here/../love" 2>&1 | sed -n 's/^update share: //p')
      printf '%-10s %-4s %5d Hz  love.update %s\n' "LÖVE" $clock $hz "$share"
    fi
  done
done
