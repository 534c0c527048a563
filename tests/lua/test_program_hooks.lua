-- A program's own hook sees every event exactly as unprofiled, in every mode at 10 kHz: the same
-- sequence of call, return, line and count events (with their lines), for each kind of mask (a
-- hook with line or count events lends the sampler its events for safe points), and samples
-- still come.
local H = dofile("harness.lua")
local profiler = require "profiler"

local function leaf(i) return i * 2 % 7 end
local function mid(i) local x = leaf(i) if x > 3 then x = x + leaf(i + 1) end return x end
local function work() local s = 0; for i = 1, 6e4 do s = s + mid(i) end; return s end

-- The program's hook logs every event; returns the log and how many samples were taken.
local function trace(mask, count, opts)
  local log, n = {}, 0
  if opts then profiler.start_profiler(opts) end
  debug.sethook(function(ev, line) n = n + 1; log[n] = line and (ev .. line) or ev end, mask, count)
  work()
  debug.sethook()
  local samples = 0
  if opts then profiler.stop_profiler(); samples = profiler.sample_count() end
  return log, n, samples
end

local function first_difference(a, na, b, nb)
  for i = 1, math.max(na, nb) do
    if a[i] ~= b[i] then return string.format("event %d: unprofiled %s, profiled %s", i, tostring(a[i]), tostring(b[i])) end
  end
  return nil
end

local modes = {
  {name = "10 kHz", hz = 10000},
  {name = "10 kHz wall", hz = 10000, clock = "wall"},
  {name = "10 kHz + calls", hz = 10000, count_calls = true},
}
-- Masks with line or count events lend their events; call and return masks see none of ours.
-- Count hooks of 1 would starve a sampler that waits for the count to move: they sample too.
for _, hook in ipairs{{"lc", 1000}, {"l", 0}, {"c", 0}, {"r", 0}, {"crl", 0}, {"l", 5}, {"", 7}, {"c", 250}, {"", 1}, {"r", 3}} do
  local mask, count = hook[1], hook[2]
  local plain, np = trace(mask, count)
  for _, m in ipairs(modes) do
    local got, ng, samples = trace(mask, count, {hz = m.hz, clock = m.clock, count_calls = m.count_calls})
    local what = string.format("mask %q count %d, %s", mask, count, m.name)
    local diff = first_difference(plain, np, got, ng)
    H.check(ng == np and not diff, "%s: %d events against %d; %s", what, ng, np, diff or "")
    H.check(samples > 10, "%s: the profiler still sampled (%d samples)", what, samples)
  end
end

-- A C function running for many ticks under a line hook: the sampler, armed on the program's
-- events, is asked again and again before the next one comes, and the program keeps its hook.
do
  local text = ("x"):rep(2e5)
  local function slow_c() local s = 0; for i = 1, 30 do s = s + (text:find("[y]") or i) end; return s end
  local function lines(opts)
    local n = 0
    if opts then profiler.start_profiler(opts) end
    debug.sethook(function() n = n + 1 end, "l")
    slow_c()
    local kept = debug.gethook() ~= nil
    debug.sethook()
    if opts then profiler.stop_profiler() end
    return n, kept
  end
  local plain = lines()
  for _, clock in ipairs{"cpu", "wall"} do
    local got, kept = lines({hz = 10000, clock = clock})
    H.check(kept and got == plain, "slow C calls under a line hook, %s clock: %d line events against %d, hook %s",
            clock, got, plain, kept and "kept" or "lost")
  end
end
-- A program that sets and clears its hook again and again: a tick may come between
-- lua_sethook's writes of the hook and its mask, and an arm that saved that half (a hook
-- without events) put it back after the sample, so a whole round of events was lost.
H.check_hook_toggles(profiler, 5)
H.done()
