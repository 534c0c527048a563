-- Deep stacks: every frame is walked (in linear time), recursion is counted once per stack,
-- and a high rate on a deep stack neither livelocks nor crawls.
local profiler = require "profiler"
local H = dofile("harness.lua")

local DEPTH = 20000
local function bottom() local x = 0 for i = 1, 40000000 do x = x + i % 7 end return x end
local function deep(n) if n == 0 then local r = bottom(); return r end local r = deep(n - 1); return r end

local t0 = os.clock()
profiler.statprof(function() local r = deep(DEPTH); return r end, {hz = 10000, full_stacks = true, display = false})
local elapsed = os.clock() - t0
local at_bottom, exact = 0, 0
for _, stack in ipairs(profiler.fetch_stacks()) do
  if stack[1]:find("^bottom") then
    at_bottom = at_bottom + 1
    -- bottom, then DEPTH + 1 frames of deep, then the anonymous wrapper: nothing skipped.
    local ok = #stack == DEPTH + 3 and stack[2]:find("^deep") and stack[DEPTH + 2]:find("^deep")
               and not stack[DEPTH + 3]:find("^deep")
    if ok then exact = exact + 1 end
  end
end
H.check(at_bottom > 0, "samples at the bottom of the recursion: %d", at_bottom)
H.check(exact == at_bottom, "%d of %d deep stacks had every frame", exact, at_bottom)
local c = H.counts(profiler)
local d = H.find(c, "deep (")
H.check(d and d.cum <= profiler.sample_count(), "deep counted once per stack")
H.check_invariants(profiler, "deep")
local h = profiler.health()
print(string.format("depth %d at 10 kHz: %.2f s, %d samples from %d walks (%d ticks carried)",
                    DEPTH, elapsed, profiler.sample_count(), h.samples_taken, h.ticks_merged))
H.check(elapsed < 30, "no crawl: %.1f s", elapsed)
H.check(math.abs(profiler.sample_count() / profiler.accumulated_time() - 10000) < 2000,
        "the rate holds through weights: %.0f Hz", profiler.sample_count() / profiler.accumulated_time())
H.done()
