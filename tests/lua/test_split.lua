-- Known-split workloads: shares within a few percentage points at 1000 Hz, on both clocks.
local profiler = require "profiler"
local H = dofile("harness.lua")

-- Two leaves doing 3:1 the same work, in rounds far shorter than the sampling period so
-- the two cannot alias with it. About a second of work gives ~1000 samples: a binomial
-- standard deviation of 1.4 points. On a loaded machine signals come late and one stack walk
-- carries several ticks, so the bound is 4.5 sigma of the walks, not of the ticks (and at
-- least 4 points). The bench measures accuracy properly (samples/bench, about 1 point).
local function heavy(n) local x = 0 for i = 1, 3 * n do x = x + i % 7 end return x end
local function light(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function work(rounds)
  local s = 0
  for _ = 1, rounds do s = s + heavy(2000) + light(2000) end
  return s
end

for _, clock in ipairs({"cpu", "wall"}) do
  local result = profiler.statprof(function() local r = work(25000); return r end, {hz = 1000, clock = clock, display = false})
  H.check(result == work(1) * 25000, "%s: statprof returns the function's result", clock)
  local c = H.counts(profiler)
  local n = profiler.sample_count()
  local h, l = H.find(c, "heavy ("), H.find(c, "light (")
  H.check(h and l, "%s: heavy and light both sampled", clock)
  if h and l then
    local hs, ls = 100 * h.self / n, 100 * l.self / n
    print(string.format("%s: %d samples, heavy %.1f%%, light %.1f%% (expected 75/25)", clock, n, hs, ls))
    local walks = profiler.health().samples_taken
    local tol = math.max(4, 450 * math.sqrt(0.75 * 0.25 / math.max(walks, 1)))
    H.check(math.abs(hs - 75) <= tol, "%s: heavy share %.1f%% not within %.1f points of 75%%", clock, hs, tol)
    H.check(math.abs(ls - 25) <= tol, "%s: light share %.1f%% not within %.1f points of 25%%", clock, ls, tol)
  end
  H.check(n >= 400, "%s: too few samples (%d)", clock, n)
  H.check_invariants(profiler, clock)
  H.check_no_foreign_frames(profiler, clock)
end

-- Cumulative counts once per stack: `outer` is on every stack, recursion or not.
local function rec(d) if d == 0 then return H.spin(1500000) end local r = rec(d - 1); return r end
local function outer() local s = 0 for _ = 1, 20 do s = s + rec(30) end return s end
profiler.statprof(function() local r = outer(); return r end, {hz = 1000, display = false})
local c = H.counts(profiler)
local n = profiler.sample_count()
local o, r = H.find(c, "outer ("), H.find(c, "rec (")
H.check(o and o.cum == n, "outer is on every stack: cum %s of %d", o and o.cum, n)
H.check(r and r.cum <= n and r.cum >= 0.95 * n, "rec counted once per stack: cum %s of %d", r and r.cum, n)
H.check_invariants(profiler, "recursion")
H.done()
