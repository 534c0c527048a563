-- Attribution: each share a report prints is the share of time measured: short C functions
-- are charged the ticks that land in them; a loop that repeats at the sampling rate is not
-- aliased.
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

-- Frame loops: a game's frame loop repeating with exactly the sampling period (or a multiple)
-- must not be sampled at one phase of the frame. Each frame busy-waits on the CPU clock, so
-- its parts are exact shares of CPU time. With a fixed timer period the shares came out
-- anywhere (53-60% for a true 70% at 250 Hz); with random gaps, within what the sample count
-- explains (binomial: 4 standard deviations, plus 1 point for the profiler's own shift).
local function until_clock(t) while os.clock() < t do end end
local function update(t) until_clock(t) end
local function physics(t) until_clock(t) end
local function render(t) until_clock(t) end
for _, case in ipairs({{hz = 500, periods = 1, frames = 800, parts = {update = 0.7, render = 0.3}},
                       {hz = 200, periods = 2, frames = 160, parts = {update = 0.6, physics = 0.2, render = 0.2}}}) do
  local frame, parts = case.periods / case.hz, case.parts
  profiler.statprof(function()
    local t = os.clock()
    for _ = 1, case.frames do
      local at = t + parts.update * frame
      update(at)
      if parts.physics then
        at = at + parts.physics * frame
        physics(at)
      end
      render(at + parts.render * frame)
      t = t + frame
    end
  end, {hz = case.hz, display = false})
  local counts = H.counts(profiler)
  local total = 0
  for name in pairs(case.parts) do total = total + (H.find(counts, name) or {cum = 0}).cum end
  for name, truth in pairs(case.parts) do
    local share = (H.find(counts, name) or {cum = 0}).cum / math.max(total, 1)
    local bound = 4 * math.sqrt(truth * (1 - truth) / math.max(total, 1)) + 0.01
    H.check(total >= 0.8 * case.frames * case.periods and math.abs(share - truth) <= bound,
            "frame of %d period(s) at %d Hz: %s %.1f%%, true %.0f%% (bound %.1f points, %d samples)",
            case.periods, case.hz, name, 100 * share, 100 * truth, 100 * bound, total)
  end
  H.check_invariants(profiler, "frame loop")
end

-- Names say where a function lives, the same in every run however it was called: a method of
-- a global class is "Vec.new" even when called through a local alias or a table slot (it was
-- "?" or "new" by the call site), a module's function "shapes.area".
Vec = {}
function Vec.new(n) local t = {} for i = 1, n do t[i] = i end return t end
package.loaded.shapes = {area = function(n) local s = 0 for i = 1, n do s = s + i * i % 7 end return s end}
local slots = {Vec.new}
local area = require("shapes").area
local labels = {}
for run = 1, 2 do
  profiler.statprof(function()
    for _ = 1, 40 do slots[1](2e4); area(4e4) end
  end, {hz = 1000, display = false})
  local named = H.counts(profiler)
  local _, new_label = H.find(named, "Vec.new (")
  local _, area_label = H.find(named, "shapes.area (")
  H.check(new_label and area_label, "run %d: qualified names, got: %s", run,
          table.concat((function() local t = {} for k in pairs(named) do t[#t + 1] = k end return t end)(), ", "))
  labels[run] = tostring(new_label) .. "|" .. tostring(area_label)
end
H.check(labels[1] == labels[2], "names stable across runs: %s / %s", labels[1], labels[2])
Vec, package.loaded.shapes = nil, nil

-- Functions no module or global holds take the name their text declares (a local function,
-- a field of a local table), else "<anonymous>" with the line: never "?", however they are
-- called (a pcall body, a coroutine body, a callback from C, the target of a tail call), and
-- the same in every run.
local function spin(n) local s = 0 for i = 1, n do s = s + i % 3 end return s end
local function tail_target() local s = 0 for i = 1, 1e5 do s = s + i % 5 end return s end
local function via_tail() return tail_target() end  -- tail_target is only ever reached by a tail call
local handlers = {}
handlers.step = function() spin(1e5) end
local lines = {}
for run = 1, 2 do
  profiler.statprof(function()
    for _ = 1, 20 do
      pcall(function() spin(1e5) end)
      coroutine.wrap(function() spin(1e5) end)()
      table.sort({3, 1, 2}, function(a, b) spin(1e5) return a < b end)  -- (2e4: too few samples to be sure of)
      via_tail()
      handlers.step()
    end
  end, {hz = 1000, display = false})
  local got = {}
  for label in pairs(H.counts(profiler)) do
    H.check(not label:find("^%?"), "run %d: no function is named '?': %s", run, label)
    -- Compared between runs: the functions sure to be sampled (a caller's instant may not be).
    if label:find("^<anonymous>") or label:find("^spin") or label:find("^tail_target") or label:find("^handlers") then
      got[#got + 1] = label
    end
  end
  table.sort(got)
  lines[run] = table.concat(got, ", ")
  local counts = H.counts(profiler)
  for _, prefix in ipairs({"spin (", "tail_target (", "handlers.step ("}) do
    H.check(H.find(counts, prefix), "run %d: %s... in %s", run, prefix, lines[run])
  end
  local anonymous = 0
  for label in pairs(counts) do if label:find("^<anonymous> %(") then anonymous = anonymous + 1 end end
  H.check(anonymous >= 3, "run %d: the pcall, coroutine and sort bodies are anonymous by line: %s", run, lines[run])
end
H.check(lines[1] == lines[2], "the same names in every run:\n%s\n%s", lines[1], lines[2])
-- A leaf with neither calls nor loops: Lua 5.4 sees a hook set from the signal handler only
-- where an instruction re-reads its trap, so the count event first fired in the caller after
-- the return, which took every tick (the leaf had 0% of the samples; it runs ~99% of the time).
local body = {"local x = ..."}
for _ = 1, 300 do body[#body + 1] = "x = x * 1.0000001 + 0.5" end
body[#body + 1] = "return x"
local straight = load(table.concat(body, "\n"), "=straight_leaf")
profiler.statprof(function()
  local s = 0
  for _ = 1, 200000 do s = straight(s) % 1000 end
end, {hz = 1000, display = false})
local counts = H.counts(profiler)
local n = profiler.sample_count()
local leaf = 0
for label, c in pairs(counts) do if label:find("straight_leaf", 1, true) then leaf = leaf + c.self end end
H.check(n >= 50 and leaf / n > 0.85, "a straight-line leaf keeps its ticks: %d of %d samples", leaf, n)
H.done()
