-- Every figure in its own unit: a sample count counts samples (not bytes), and a report made
-- while the profiler runs shows the time so far.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function report_text()
  local path = os.tmpname()
  profiler.display(path)
  local text = H.read(path)
  os.remove(path)
  return text
end

-- A space-only run: its weights are bytes, its sample count is the number of samples.
local function build()
  local t = {}
  for i = 1, 1e5 do t[i] = ("x"):rep(40) .. i end
  return #t
end
profiler.statprof(build, {hz = false, alloc = 65536, display = false})
local n, taken = profiler.sample_count(), profiler.health().samples_taken
local shown = tonumber(report_text():match("Sample count: (%d+)"))
H.check(n > 10 and n == taken and n == shown, "space: sample_count() %d, samples taken %d, report %s", n, taken, tostring(shown))
H.check(n < 1e4, "space: sample_count() is not the bytes allocated (%d)", n)

-- A time run: the sample count is the ticks the samples carry, as the report says.
profiler.statprof(function() H.spin(3e6) end, {hz = 1000, display = false})
n = profiler.sample_count()
shown = tonumber(report_text():match("Sample count: (%d+)"))
H.check(n > 0 and n == shown, "time: sample_count() %d, report %s", n, tostring(shown))

-- display() while the profiler runs: the time so far, not 0.
profiler.reset(0, 1000, false)
profiler.start()
local t0 = os.clock()
while os.clock() - t0 < 0.2 do H.spin(1e5) end
local spent = os.clock() - t0
local text = report_text()
H.check(profiler.active(), "still running after display")
profiler.stop()
local total = tonumber(text:match("Total time: ([%d.]+) seconds"))
H.check(total and total >= 0.5 * spent, "display while running: total %s s after %.3f s of work\n%s", tostring(total), spent, text)
H.check(math.abs(profiler.accumulated_time() - total) < 0.5 + spent, "accumulated_time after stop")
-- Time in GC: the samples in the collector (collectgarbage: on Lua 5.4 the collector's only
-- entry a sample can tell; incremental steps are charged to the code that allocates) as a
-- share of the total. Full collections over a large live heap, timed directly: the report's
-- GC seconds are that time within what ~200 samples explain. It printed 0.0 before.
do
  local live = {}
  for i = 1, 3e5 do live[i] = {i} end
  local in_gc = 0
  local function work()
    for _ = 1, 8 do
      local t = os.clock()
      collectgarbage("collect")
      in_gc = in_gc + os.clock() - t
      for i = 1, 5e4 do local g = {i, tostring(i)} end
    end
  end
  profiler.statprof(work, {hz = 1000, display = false})
  local text = report_text()
  local total, gc = text:match("Total time: ([%d.e-]+) seconds %(([%d.e-]+) seconds in GC%)\nGC time: not measured")
  total, gc = tonumber(total), tonumber(gc)
  H.check(gc and gc > 0 and math.abs(gc - in_gc) <= math.max(0.2 * in_gc, 0.03),
          "GC seconds %s in the report, %.3f s timed inside collectgarbage (total %s)", tostring(gc), in_gc, tostring(total))
  live = nil
end
-- Timelines: a long C call is sampled once, when it returns, with the weight of every tick
-- it took. Its event must cover that time: the sample is stamped at its first tick. A 0.4 s
-- table.sort was a 0.5 ms event and a hole before.
do
  local t = {}
  for i = 1, 1e6 do t[i] = (i * 7919) % 1000003 end
  local spent
  profiler.statprof(function()
    local x = H.spin(2e6)
    local c = os.clock()
    table.sort(t)
    spent = os.clock() - c
    return x + H.spin(2e6)
  end, {hz = 1000, full_stacks = true, display = false})
  local path = os.tmpname()
  profiler.write(path, "chrome")
  local text = H.read(path)
  os.remove(path)
  local open, total = nil, 0
  for name, ph, ts in text:gmatch('"name":"([^"]*)","ph":"([BE])","pid":%d+,"tid":%d+,"ts":([%d.]+)') do
    if name:find("table.sort", 1, true) then
      if ph == "B" then open = tonumber(ts) elseif open then total = total + tonumber(ts) - open end
    end
  end
  H.check(total / 1e6 >= 0.8 * spent and total / 1e6 <= 1.2 * spent + 0.01,
          "table.sort's timeline event %.1f ms for %.1f ms spent in it", total / 1e3, spent * 1e3)
end
H.done()
