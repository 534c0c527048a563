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
    -- On the wall clock, time the thread waited for a CPU (a loaded machine) is off-CPU time,
    -- under a (blocked) leaf: the functions' shares are of the time on the CPU.
    local b = H.find(c, "(blocked)")
    local on_cpu = n - (b and b.self or 0)
    local hs, ls = 100 * h.self / on_cpu, 100 * l.self / on_cpu
    print(string.format("%s: %d samples (%d on the CPU), heavy %.1f%%, light %.1f%% (expected 75/25)", clock, n, on_cpu, hs, ls))
    local walks = profiler.health().samples_taken
    local tol = math.max(4, 450 * math.sqrt(0.75 * 0.25 / math.max(walks, 1)))
    H.check(math.abs(hs - 75) <= tol, "%s: heavy share %.1f%% not within %.1f points of 75%%", clock, hs, tol)
    H.check(math.abs(ls - 25) <= tol, "%s: light share %.1f%% not within %.1f points of 25%%", clock, ls, tol)
  end
  H.check(n >= 400, "%s: too few samples (%d)", clock, n)
  H.check_invariants(profiler, clock)
  H.check_no_foreign_frames(profiler, clock)
end

-- Cumulative counts once per stack: `outer` is on every stack but those of the wrapper alone,
-- recursion or not. (A tick in the few instructions the wrapper runs around its call of outer
-- is legitimately the wrapper's.)
local function rec(d) if d == 0 then return H.spin(1500000) end local r = rec(d - 1); return r end
local function outer() local s = 0 for _ = 1, 20 do s = s + rec(30) end return s end
local function wrapper() local r = outer(); return r end
profiler.statprof(wrapper, {hz = 1000, display = false, full_stacks = true})
local c = H.counts(profiler)
local n = profiler.sample_count()
local o, r = H.find(c, "outer ("), H.find(c, "rec (")
local with = {outer = 0, rec = 0}
local stray = 0
for _, st in ipairs(profiler.fetch_stacks()) do
  local seen = {}
  for _, frame in ipairs(st) do seen[frame:match("^(%w+) %(") or frame] = true end
  for name in pairs(with) do if seen[name] then with[name] = with[name] + st.weight end end
  if not seen.outer and not (#st == 1 and st[1]:find("^wrapper %(")) then stray = stray + st.weight end
end
H.check(stray == 0, "%d samples of stacks with neither outer nor the wrapper alone", stray)
H.check(o and o.cum == with.outer and o.cum >= n - 2, "outer counted once per stack: cum %s, on %d stacks of %d",
        o and o.cum, with.outer, n)
H.check(r and r.cum == with.rec and r.cum >= 0.95 * n, "rec counted once per stack: cum %s, on %d stacks of %d",
        r and r.cum, with.rec, n)
H.check_invariants(profiler, "recursion")

-- Program time starts when fn is called: a tick due while statprof sets itself up is not
-- charged to fn's first instruction. Many short runs at 10 kHz: the wrapper alone drew 2-3%
-- of the samples when the clock ran from the timer's start (a few microseconds of setup per
-- run), about 0.1% now (the call machinery around fn's own few instructions). That machinery
-- is heavier under ASan (0.83% once at 20000 steps): 40000 steps keep its share under the
-- bound while a set-up leak of that size would still show at 1-1.5%.
local function short() return H.spin(40000) end
local function short_wrapper() local r = short(); return r end
local total, alone = 0, 0
for _ = 1, 1500 do
  profiler.statprof(short_wrapper, {hz = 10000, display = false, full_stacks = true})
  for _, st in ipairs(profiler.fetch_stacks()) do
    total = total + st.weight
    if #st == 1 then alone = alone + st.weight end
  end
end
print(string.format("short runs: %d samples, %d (%.2f%%) on the wrapper alone", total, alone, 100 * alone / total))
H.check(total >= 1000 and alone <= 0.008 * total, "short runs: %d of %d samples on the wrapper alone", alone, total)
H.done()
