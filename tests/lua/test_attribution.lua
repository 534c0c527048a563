-- Attribution: each share a report prints is the share of time measured: short C functions
-- are charged the ticks that land in them.
local profiler = require "profiler"
local H = dofile("harness.lua")

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
