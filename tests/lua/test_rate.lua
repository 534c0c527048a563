-- The achieved rate (samples per second of the chosen clock) is within 10% of the rate asked,
-- above the 250 Hz that CPU-clock POSIX timers deliver on these machines.
local profiler = require "profiler"
local H = dofile("harness.lua")

-- Ticks fall at random gaps (uniform in [period/2, 3*period/2)): a run of N periods counts
-- N ticks with a standard deviation of sqrt(N/12). At 100 Hz the run is long enough (~170
-- periods) that 10% is more than 4 of them.
local function busy(rounds) local s = 0 for _ = 1, rounds do s = s + H.spin(50000000) end return s end
for _, clock in ipairs({"cpu", "wall"}) do
  for _, hz in ipairs({100, 1000}) do
    profiler.statprof(function() return busy(hz == 100 and 6 or 1) end, {hz = hz, clock = clock, display = false})
    local t, n = profiler.accumulated_time(), profiler.sample_count()
    local rate = n / t
    print(string.format("%s clock at %d Hz: %d samples in %.3f s = %.1f Hz", clock, hz, n, t, rate))
    H.check(t > 0.1, "%s/%d: accumulated time %.3f s", clock, hz, t)
    H.check(math.abs(rate - hz) <= 0.1 * hz, "%s/%d: rate %.1f Hz not within 10%%", clock, hz, rate)
  end
end

-- CPU clock: no samples while the program sleeps; wall clock: sleeping time is sampled.
local function nap() os.execute("sleep 0.3") end
profiler.statprof(nap, {hz = 1000, clock = "cpu", display = false})
-- Only os.execute's own CPU time (fork, wait: up to ~40 ms on a loaded machine) is sampled.
H.check(profiler.sample_count() < 100, "cpu clock sampled a sleeping program %d times", profiler.sample_count())
profiler.statprof(nap, {hz = 1000, clock = "wall", display = false})
H.check(profiler.sample_count() >= 200, "wall clock took only %d samples in 0.3 s", profiler.sample_count())

-- A fresh process's first sample pays once for what it meets first (page faults, first
-- allocations, code never run) and costs many later ones: that must not stop a short run's
-- sampling. 100 processes each profile a 0.5 ms function at 10 kHz (100000 steps: with 20000, a
-- fast machine ran it in 0.09 ms, one tick, and the check's 2 ticks a run failed). When the first sample's
-- cost alone set the next arming 4 times that cost later, ~43% of the ticks found sampling
-- deferred and were merged into the end; with the budget's allowance, about 1%. Not checked
-- under ASan: there a fresh process's first sample costs 1-2 ms, more than the allowance
-- (12% merged alone, 58% beside the other tests; the budget's own tests are in core_tests).
local sanitized = (os.getenv("LD_PRELOAD") or ""):find("libasan", 1, true) ~= nil
if not sanitized then
  local script = os.tmpname()
  local fh = assert(io.open(script, "w"))
  fh:write([[
  package.cpath = ... .. package.cpath
  local profiler = require "profiler"
  local function warm() local x = 0 for i = 1, 100 do x = x + i % 7 end return x end
  warm()
  local function f() local x = 0 for i = 1, 100000 do x = x + i % 7 end return x end
  profiler.statprof(f, {hz = 10000, display = false})
  print(profiler.sample_count(), profiler.health().ticks_merged)
  ]])
  fh:close()
  local cpath = package.cpath:match("^[^;]*;")
  -- Runs until 300 ticks were seen (a loaded machine gives a 0.4 ms run fewer: its ticks due
  -- at the end are crossed by stop, not sampled), at most 600 runs.
  local ticks, merged = 0, 0
  for _ = 1, 600 do
    if ticks >= 300 then break end
    local p = assert(io.popen(string.format("%s %s '%s'", os.getenv("LUA54"), script, cpath)))
    local t, m = p:read("*n", "*n")
    p:close()
    ticks, merged = ticks + (t or 0), merged + (m or 0)
  end
  os.remove(script)
  print(string.format("fresh short runs: %d of %d ticks merged (%.1f%%)", merged, ticks, 100 * merged / math.max(ticks, 1)))
  H.check(ticks >= 200 and merged <= 0.1 * ticks, "%d of %d ticks merged", merged, ticks)
end
H.done()
