-- The achieved rate (samples per second of the chosen clock) is within 10% of the rate asked,
-- above the 250 Hz that CPU-clock POSIX timers deliver on these machines.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function busy() return H.spin(50000000) end
for _, clock in ipairs({"cpu", "wall"}) do
  for _, hz in ipairs({100, 1000}) do
    profiler.statprof(busy, {hz = hz, clock = clock, display = false})
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
H.done()
