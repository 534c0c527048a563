-- What the module does alike in every PUC Lua it serves (5.1 to 5.5), in the dialect they all
-- share: a profile of a known split, coroutines and errors that behave as unprofiled, a
-- program's hook kept, exact call counts, space and GC samples, and the layout of the release's
-- structs that it recognised.
local profiler = require "profiler"
local H = dofile("harness.lua")

-- Two functions doing work in the ratio 3:1: the samples follow, and self counts add up.
local function heavy() local x = 0 for i = 1, 300000 do x = x + i % 7 end return x end
local function light() local x = 0 for i = 1, 100000 do x = x + i % 7 end return x end
profiler.statprof(function() for _ = 1, 60 do heavy(); light() end end, {hz = 1000, display = false})
local counts = H.counts(profiler)
local h, l = H.find(counts, "heavy ("), H.find(counts, "light (")
local total = h and l and h.self + l.self or 0
H.check(total >= 50, "%s: heavy and light sampled (%d samples)", _VERSION, total)
if total > 0 then
  local share = h.self / total
  H.check(share > 0.6 and share < 0.9, "%s: heavy's share %.2f of heavy and light (3:1 work): %d and %d samples; %s",
          _VERSION, share, h.self, l.self, H.health_line(profiler))
end
H.check_invariants(profiler, _VERSION)

-- Coroutines, their errors and wrap's, the same with the profiler on as off.
local function behaviour()
  local out = {}
  local function add(...)
    local t = {}
    for i = 1, select("#", ...) do
      local v = select(i, ...)
      t[#t + 1] = type(v) == "table" and "table" or tostring(v)
    end
    out[#out + 1] = table.concat(t, " | ")
  end
  add(pcall(coroutine.resume, 1))
  add(pcall(coroutine.wrap, 1))
  local co = coroutine.create(function(a) local b = coroutine.yield(a + 1); error("boom " .. b) end)
  add(coroutine.resume(co, 1))
  add(coroutine.resume(co, "x"))
  add(coroutine.status(co))
  add(coroutine.resume(co))
  local w = coroutine.wrap(function() coroutine.yield(1); error({}) end)
  add(w())
  add(pcall(w))
  add(pcall(w))
  local sum = 0
  for i = 1, 200 do
    local g = coroutine.wrap(function(n) for k = n, 1, -1 do coroutine.yield(k) end return 0 end)
    sum = sum + g(i) + g()
  end
  add(sum)
  return table.concat(out, "\n")
end
local plain = behaviour()
local profiled
profiler.statprof(function() profiled = behaviour() end, {hz = 10000, display = false})
H.check(profiled == plain, "%s: coroutine behaviour differs under the profiler:\n--- plain\n%s\n--- profiled\n%s",
        _VERSION, plain, tostring(profiled))

-- A program's line hook keeps firing during a run, and debug.gethook shows it during and after.
local lines, during = 0, nil
local function on_line() lines = lines + 1 end
debug.sethook(on_line, "l")
profiler.statprof(function()
  for _ = 1, 20 do heavy() end
  during = debug.gethook()
end, {hz = 10000, display = false})
local after, mask = debug.gethook()
debug.sethook()
H.check(during == on_line and after == on_line and mask == "l",
        "%s: the program's line hook shows during (%s) and after (%s %s) the run", _VERSION, tostring(during),
        tostring(after), tostring(mask))
H.check(lines > 1000 and profiler.sample_count() > 0, "%s: the line hook fired (%d) and the profiler sampled (%d)",
        _VERSION, lines, profiler.sample_count())

-- Exact call counts: a function called a known number of times, and its caller's count.
local function counted(x) return x + 1 end
local function count_caller() local s = 0 for _ = 1, 12345 do s = counted(s) end return s end
profiler.statprof(function() count_caller() end, {hz = 1000, count_calls = true, display = false})
local counts = H.counts(profiler)
local cd, cc = H.find(counts, "counted ("), H.find(counts, "count_caller (")
H.check(cd and cd.calls == 12345 and cc and cc.calls == 1, "%s: exact counts (counted %s, count_caller %s)", _VERSION,
        cd and tostring(cd.calls), cc and tostring(cc.calls))

-- Space (time sampling off): the bytes sampled are about what Lua says was allocated, nearly all
-- in the function that allocates; a stack after every collection cycle (each full collection of
-- the run one at least), nearly all in the function that collects.
local function churn(n)
  local t = {}
  for i = 1, n do t[i] = {i} end
  return t
end
collectgarbage("collect")
local before = collectgarbage("count")
collectgarbage("stop")
profiler.statprof(function() churn(50000) end, {hz = false, alloc = 1024, display = false})
local grown = (collectgarbage("count") - before) * 1024
collectgarbage("restart")
local space = profiler.save_current_profile():fetch_call_tree().total
local ch = H.find(H.counts(profiler), "churn (")
-- (Nearly all: a sample is taken at the next safe point, which may come after churn returned.)
H.check(space > 0.8 * grown and space < 1.2 * grown and ch and ch.cum >= 0.95 * space,
        "%s: %d bytes sampled of %d allocated (churn: %s)", _VERSION, space, grown, ch and tostring(ch.cum))
local function collect_often() for _ = 1, 10 do churn(2000) collectgarbage() end end
profiler.statprof(collect_often, {hz = false, gc = true, display = false})
local cycles = profiler.save_current_profile():fetch_call_tree().total
local co_gc = H.find(H.counts(profiler), "collect_often (")
H.check(cycles >= 10 and co_gc and co_gc.cum >= 0.9 * cycles, "%s: %d GC cycles sampled over 10 full collections (%s in the run)",
        _VERSION, cycles, co_gc and tostring(co_gc.cum))

-- An error in the profiled function passes through with its value, and stops the run.
local ok, e = pcall(profiler.statprof, function() error("boom", 0) end, {display = false})
H.check(not ok and e == "boom" and not profiler.active(), "%s: the error passes through (%s)", _VERSION, tostring(e))
local value = {}
local ok2, e2 = pcall(profiler.statprof, function() error(value) end, {display = false})
H.check(not ok2 and e2 == value, "%s: an error value that is a table passes through unchanged", _VERSION)

-- The release's structs were recognised (5.1: its hook fields alone, as the report says); with
-- SCRIPTPROF_LUA_INTERNALS=off (run so for every release) everything above held through the
-- public API alone, and the report says so.
local layouts = {["Lua 5.1"] = "^Lua 5%.1$", ["Lua 5.2"] = "^Lua 5%.2$", ["Lua 5.3"] = "^Lua 5%.3$",
                 ["Lua 5.4"] = "^Lua 5%.4%.[0-8]", ["Lua 5.5"] = "^Lua 5%.5%.0$"}
local api_only = os.getenv("SCRIPTPROF_LUA_INTERNALS") == "off"
local internals = tostring(profiler.health().internals)
local want = api_only and "^public API only$" or layouts[_VERSION]
H.check(want and internals:find(want) ~= nil, "%s: internals %s", _VERSION, internals)
local report = os.tmpname()
profiler.statprof(heavy, {hz = 1000, file = report})
local header = H.read(report)
os.remove(report)
H.check(not api_only or header:find("Reading Lua's internals is off (SCRIPTPROF_LUA_INTERNALS=off): sampled through " ..
                                    "the public API alone", 1, true),
        "%s: the report says the public API alone was used:\n%s", _VERSION, header)

H.done()
