-- Attribution: each share a report prints is the share of time measured. A game's frame loop
-- whose frame lasts exactly one sampling period must not be seen at one phase only (sampling is
-- random in time), and short C functions are charged the ticks that land in them.
local profiler = require "profiler"
local H = dofile("harness.lua")

-- Frames of exactly one period of CPU time: `update` runs the first 70% of each, `draw` the rest.
local function frame_loop(period, frames)
  local function update(t_end) while os.clock() < t_end do end end
  local function draw(t_end) while os.clock() < t_end do end end
  local t = os.clock()
  for _ = 1, frames do
    update(t + 0.7 * period)
    draw(t + period)
    t = t + period
  end
  return update, draw
end

for _, hz in ipairs({250, 1000}) do
  for run = 1, 3 do
    local update, draw
    profiler.statprof(function() update, draw = frame_loop(1 / hz, hz) end, {hz = hz, display = false})
    local n = profiler.sample_count()
    local function cum(f) local cd = profiler.proc_call_data(f) return cd and profiler.call_data_cum_samples(cd) or 0 end
    local share = cum(update) / math.max(n, 1)
    -- 4.5 binomial standard deviations: never by chance; a phase-locked sampler was off by 10-17 points.
    local bound = 4.5 * math.sqrt(0.7 * 0.3 / math.max(n, 1))
    print(("%d Hz run %d: update %.1f%% of %d samples (draw %.1f%%), truth 70%%, bound +-%.1f"):format(
      hz, run, 100 * share, n, 100 * cum(draw) / math.max(n, 1), 100 * bound))
    H.check(n >= hz / 2 and math.abs(share - 0.7) <= bound, "%d Hz run %d: update %.1f%% of %d samples, truth 70%%",
            hz, run, 100 * share, n)
  end
end

-- Short C functions: a loop spending most of its time in string.format and math.sin charges them.
local function mixed(n)
  local s = 0
  for i = 1, n do s = s + #string.format("%d:%g", i, math.sin(i)) end
  return s
end
profiler.statprof(function() mixed(3e5) end, {hz = 1000, display = false})
local c = H.counts(profiler)
local n = profiler.sample_count()
local fmt = (H.find(c, "string.format") or {self = 0}).self
local sin = (H.find(c, "math.sin") or {self = 0}).self
H.check(n > 50 and (fmt + sin) / n > 0.3, "string.format %d and math.sin %d self of %d samples", fmt, sin, n)
H.check_invariants(profiler, "short C functions")
H.done()
