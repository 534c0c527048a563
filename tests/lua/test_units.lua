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
H.done()
