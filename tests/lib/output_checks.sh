# Checks shared by the install and host tests (sourced, under set -euo pipefail).

# A Lua chunk busy for 0.1 s of CPU on any Lua, JIT or not: a fixed loop count can be over
# before the first 1 kHz tick under LuaJIT.
BUSY_LUA='local t = os.clock() repeat local x = 0 for i = 1, 1e5 do x = x + i end until os.clock() - t > 0.1'

# output_has TEXT COMMAND...: runs COMMAND; fails, naming it and showing its output, unless it
# succeeds and prints TEXT. (Not `COMMAND | grep -q TEXT`: under pipefail, grep's exit at the
# first match can kill COMMAND with SIGPIPE and fail the check at random.)
output_has() {
  local want=$1 out status=0
  shift
  out=$("$@" 2>&1) || status=$?
  if ((status != 0)) || [[ $out != *"$want"* ]]; then
    echo "FAIL: '$*' exited $status; expected it to print '$want'. It printed:"
    head -20 <<<"$out"
    return 1
  fi
}

# head_of N COMMAND...: runs COMMAND and shows the first N lines of its output (COMMAND writes
# to a file first, so that head's early exit cannot cut it short with SIGPIPE).
head_of() {
  local n=$1 out
  shift
  out=$(mktemp)
  "$@" >"$out" || { local status=$?; rm -f "$out"; echo "FAIL: '$*' exited $status"; return 1; }
  head -"$n" "$out"
  rm -f "$out"
}

# SERVE_LUA: serves on a free port, asks for the index page with curl while serving, stops, and
# prints "served at ADDRESS" (the profile server's HTTP library was found where it was installed).
SERVE_LUA='local p = require "profiler"
local address = assert(p.serve{address = "127.0.0.1:0"})
local ok = os.execute("curl -sf http://" .. address .. "/debug/pprof/ | grep -q /debug/pprof/profile")
p.stop_serving()
assert(ok == true or ok == 0, "no index page at " .. address)
print("served at " .. address)'
