-- The profiler module under luajit (build/lib/luajit/profiler.so), JIT on: the same API as on
-- Lua 5.4, with LuaJIT's figures. Run by ctest with that directory on package.cpath.
package.path = arg[0]:match("^(.*)/[^/]*$") .. "/../lua/?.lua;" .. package.path
local H = require "harness"
local profiler = require "profiler"

local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function heavy() local r = spin(3 * 6000000) return r end
local function light() local r = spin(6000000) return r end

-- statprof: fn's results come back, the split is measured with the JIT on, and the report is
-- the flat one with the jit% column.
local report = os.tmpname()
local a, b = profiler.statprof(function() for _ = 1, 4 do heavy() light() end return 1, 2 end,
                               { hz = 1000, file = report })
H.check(a == 1 and b == 2, "statprof returns fn's results")
H.check(jit.status(), "the JIT stays on")
local counts = H.counts(profiler)
local h, l = H.find(counts, "heavy ("), H.find(counts, "light (")
H.check(h and l, "heavy and light are in the profile")
if h and l then
  local share = h.cum / (h.cum + l.cum)
  H.check(math.abs(share - 0.75) < 0.06, "heavy's share %.3f is 0.75 within 6 points", share)
end
local text = io.open(report):read("*a")
os.remove(report)
H.check(text:find("jit%%") and text:find("spin %("), "the report has the jit%% column and spin:\n%s", text)
H.check(profiler.status() == "analyzed", "status after statprof: %s", profiler.status())
-- The compiled share: spin's loop runs compiled; pprof splits its samples by a jit label, and
-- go tool pprof's jit=compiled total is the compiled samples (1 ms each at 1000 Hz).
local sp = H.find(counts, "spin (")
local compiled = 0
profiler.fold_call_data(function(cd) compiled = compiled + (profiler.call_data_compiled_samples(cd) or 0) end)
H.check(sp and sp.compiled and sp.compiled >= 0.8 * sp.self, "spin ran compiled: %s of %s self samples",
        sp and tostring(sp.compiled), sp and sp.self)
H.check(H.find(counts, "(jit)") == nil or H.find(counts, "(jit)").compiled == nil, "(jit) has no compiled share")
if os.execute("command -v go >/dev/null 2>&1") == 0 then
  local pb = os.tmpname()
  profiler.write(pb, "pprof")
  local p = io.popen(string.format("HOME=%s go tool pprof -top -symbolize=none -tagfocus=jit=compiled %s 2>&1",
                                   os.getenv("TMPDIR") or "/tmp", pb))
  local top = p:read("*a")
  p:close()
  os.remove(pb)
  local ms = tonumber(top:match("Showing nodes accounting for ([%d.]+)ms"))
  H.check(ms == compiled, "pprof's jit=compiled total %s ms, our compiled samples %d:\n%s", tostring(ms), compiled, top)
end

-- An error in fn stops the run, writes the report, and passes through with its value.
local ok, err = pcall(profiler.statprof, function() spin(100000) error({ code = 7 }) end, { hz = 1000, display = false })
H.check(not ok and type(err) == "table" and err.code == 7, "the error passes through unchanged")
H.check(profiler.status() ~= "sampling", "the run is stopped after an error")

-- start/stop, a file written in an interchange format, and the call counts with the JIT off.
profiler.start_profiler({ hz = 2000, count_calls = true })
H.check(not jit.status(), "counting calls turns the JIT off")
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
fib(16)
profiler.stop()
H.check(jit.status(), "and back on at stop")
local f = H.find(H.counts(profiler), "fib (")
H.check(f and f.calls == 3193, "fib(16) makes 3193 calls: %s", f and f.calls)
local out = os.tmpname()
profiler.write(out, "speedscope")
local json = io.open(out):read("*a")
os.remove(out)
H.check(json:find('"$schema"') and json:find("fib"), "a speedscope file with fib")

-- Counting shares LuaJIT's one hook with the program: the program's own debug.sethook neither
-- stops the counts nor is lost at the run's end, and debug.gethook answers what it set.
profiler.start_profiler({ hz = 2000, count_calls = true })
local seen = 0
debug.sethook(function() seen = seen + 1 end, "c")
local h1, m1 = debug.gethook()
fib(16)
profiler.stop()
local f2 = H.find(H.counts(profiler), "fib (")
H.check(f2 and f2.calls == 3193, "fib(16) still counts 3193 calls beside the program's hook: %s", f2 and f2.calls)
H.check(type(h1) == "function" and m1 == "c", "gethook during the run answers the program's hook: %s %s", tostring(h1), tostring(m1))
H.check(seen >= 3193, "the program's hook saw fib's calls: %d", seen)
local h2, m2 = debug.gethook()
debug.sethook()
H.check(h2 == h1 and m2 == "c", "the program's hook outlives the run: %s %s", tostring(h2), tostring(m2))

-- Near LuaJIT's stack limit counting steps aside (LuaJIT makes room for 21 slots before it calls
-- a hook): a recursion overflows where it does in a run that only samples with the JIT off, as
-- counting has it, and health says so. Without stepping aside it overflowed 6 frames early.
-- Within one frame: where LuaJIT overflows also depends on the sizes its stack was grown
-- through before (a run's start alone moves it by one), and the hook's room grew it sooner.
local function overflow_depth()
  local d = 0
  local function dive(n) d = n return 1 + dive(n + 1) end
  jit.off(dive)  -- compiled, its depth would depend on when the trace was made
  pcall(dive, 1)
  return d
end
jit.off()
profiler.start_profiler({ hz = 1000 })
local sampled_depth = overflow_depth()
profiler.stop()
jit.on()
profiler.start_profiler({ hz = 1000, count_calls = true })
local counted_depth = overflow_depth()
profiler.stop()
H.check(math.abs(counted_depth - sampled_depth) <= 1, "overflow at depth %d counted, %d sampled", counted_depth, sampled_depth)
H.check(profiler.health().counting_lifts >= 1, "counting stepped aside: %d", profiler.health().counting_lifts)

-- gcprof: a sample after every collection, charged to the code that made the garbage.
local function churn() local t for i = 1, 400000 do t = { i } end return t end
profiler.gcprof(function() for _ = 1, 5 do churn() end end, { display = false })
local c = H.find(H.counts(profiler), "churn (")
H.check(c and c.cum > 0, "gcprof samples churn")

-- jit.profile cannot start beside a run, and works again after it; a start kept in a local
-- before the run is refused too (it would have stopped ours without a word).
local jp = require "jit.profile"
local kept_start = jp.start
profiler.start_profiler({ hz = 1000 })
H.check(not pcall(jp.start, "f", function() end), "jit.profile.start is refused during a run")
local ok_kept, err_kept = pcall(kept_start, "f", function() end)
H.check(not ok_kept and tostring(err_kept):find("one profiler per process", 1, true),
        "a jit.profile.start kept from before the run is refused: %s", tostring(err_kept))
spin(3000000)
profiler.stop()
H.check(profiler.sample_count() > 0, "our run kept sampling")
local jp_samples = 0
H.check(pcall(kept_start, "f", function() jp_samples = jp_samples + 1 end), "jit.profile.start works after the run")
spin(30000000)
jp.stop()
H.check(jp_samples > 0, "and jit.profile's own profiler then samples: %d", jp_samples)

-- A coroutine's resumer is found from its frame: a run leaves LuaJIT's coroutine.resume and wrap
-- in place (fast functions that traces can stitch), and a program's resume kept in a local is
-- stitched like any other.
do
  local resume, wrap = coroutine.resume, coroutine.wrap
  local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
  local co = coroutine.create(function() while true do spin(2e6) coroutine.yield() end end)
  profiler.statprof(function()
    H.check(coroutine.resume == resume and coroutine.wrap == wrap, "a run leaves LuaJIT's coroutine functions in place")
    for _ = 1, 20 do resume(co) end
  end, { hz = 1000, display = false, full_stacks = true })
  local stitched, alone = 0, 0
  for _, stack in ipairs(profiler.fetch_stacks()) do
    if stack[1]:find("^spin") then
      if table.concat(stack, " <- "):find("statprof", 1, true) or #stack > 2 then stitched = stitched + stack.weight
      else alone = alone + stack.weight end
    end
  end
  H.check(stitched > 0 and alone == 0, "the coroutine's samples sit under its resumer (%d stitched, %d alone)", stitched, alone)
end

-- Lines: by default LuaJIT's function-level safe points, where the running function's line is
-- not known (its callers' are); `lines = true` puts a safe point at every line, and the loop's
-- two lines share its time.
do
  local function loop(n) local x = 0
    for i = 1, n do
      x = x + i % 7
      x = x + i % 11
    end
    return x end
  local first = debug.getinfo(loop, "S").linedefined
  local function annotated(lines)
    profiler.statprof(function() for _ = 1, 1500 do loop(100000) end end, { hz = 1000, display = false, lines = lines })
    local path = os.tmpname()
    profiler.annotate(loop, path)
    local text = io.open(path):read("*a")
    os.remove(path)
    local shares = {}
    for self, line in text:gmatch("\n +([%d.]+) +[%d.]+ +(%d+) ") do shares[tonumber(line) - first] = tonumber(self) end
    return text, shares
  end
  local text, shares = annotated(false)
  H.check(text:find("its own time has no lines", 1, true) and next(shares) == nil,
          "without lines the running line is not claimed:\n%s", text)
  text, shares = annotated(true)
  H.check((shares[2] or 0) > 25 and (shares[3] or 0) > 25, "lines = true shares the loop's two lines:\n%s", text)
end

-- A run started in a coroutine that ends (and is collected) before the run is stopped.
local co = coroutine.create(function() profiler.start_profiler({ hz = 1000 }) end)
assert(coroutine.resume(co))
co = nil
collectgarbage() collectgarbage()
spin(2000000)
profiler.stop()
H.check(profiler.status() ~= "sampling" and jit.status(), "a run started in a dead coroutine stops cleanly")

-- A program that sets and clears its hook again and again, profiled at 10 kHz: every event
-- reaches it. (A trigger that lands in the dispatch update under lua_sethook can leave the
-- table with no hook at all while the mask says profiling, until the profiler stops: the
-- program lost most of its events, under LuaJIT's own jit.profile as under ours.)
H.check_hook_toggles(profiler, 3)

-- profile_process_p: an excluded coroutine's time is not collected, and the flag reads back.
local function other(n) local r = spin(n) return r end  -- not a tail call: a frame of its own
local co = coroutine.create(function() while true do other(2e6) coroutine.yield() end end)
H.check(profiler.profile_process_p(co) == true, "profiled by default")
profiler.statprof(function() for _ = 1, 10 do coroutine.resume(co) light() end end,
                  { hz = 1000, except_processes = { co }, display = false })
local excluded_counts = H.counts(profiler)
H.check(not H.find(excluded_counts, "other (") and H.find(excluded_counts, "light (") and profiler.health().excluded > 0,
        "the excluded coroutine is not sampled (%d ticks excluded)", profiler.health().excluded)
H.check(profiler.profile_process_p(co) == false, "the exclusion reads back")
profiler.profile_process_p(co, true)
profiler.statprof(function() for _ = 1, 10 do coroutine.resume(co) end end, { hz = 1000, display = false })
H.check(H.find(H.counts(profiler), "other ("), "profiled again once the flag is set back")

-- A function of a chunk loaded from a string takes the name its text declares, as on PUC Lua.
local from_string = loadstring("local function busy_from_text(n) local x = 0 for i = 1, n do x = x + i % 7 end "
                               .. "return x end return busy_from_text")()
profiler.statprof(function() for _ = 1, 20 do from_string(3e5) end end, { hz = 1000, display = false })
H.check(H.find(H.counts(profiler), "busy_from_text ("), "a string chunk's function is named by its declaration")

H.done()
