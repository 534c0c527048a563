-- Time inside a long C function is that C function's self time: ticks that coalesce while it
-- runs are carried as the sample's weight, not collapsed into one sample.
local profiler = require "profiler"
local H = dofile("harness.lua")

-- The tables are made before the runs: growing a 200k-entry table is allocation, which the
-- sanitizer build makes several times slower (table.sort fell to 80% of that build's samples).
local unsorted, work = {}, {}
for i = 1, 200000 do unsorted[i], work[i] = (i * 7919) % 200003, 0 end
local cases = {
  ["string.rep [C]"] = function() for _ = 1, 12 do local s = string.rep("abcd", 6000000) end end,
  ["string.gsub [C]"] = function()
    local s = string.rep("hello world ", 400000)
    for _ = 1, 4 do s = s:gsub("o", "0"):gsub("0", "o") end
  end,
}
-- (table.move, which refills the table in C, is Lua 5.3's: 5.2 sorts the other two only.)
if table.move then
  cases["table.sort [C]"] = function()
    for _ = 1, 3 do table.move(unsorted, 1, #unsorted, 1, work); table.sort(work) end
  end
end
for label, fn in pairs(cases) do
  for _, hz in ipairs({100, 1000}) do
    local t0 = os.clock()
    profiler.statprof(fn, {hz = hz, display = false})
    local elapsed = os.clock() - t0
    local c = H.counts(profiler)
    local n = profiler.sample_count()
    -- Every tick is kept: a C function allocating a block as big as a stack near the limit
    -- (string.rep's 24 MB) is not a stack growing, and its ticks are not dropped (60% were).
    H.check(profiler.health().no_room == 0, "%s at %d Hz: %d ticks dropped", label, hz, profiler.health().no_room)
    if hz == 1000 then
      H.check(n >= 0.8 * elapsed * hz, "%s: %d ticks in %.3f s of CPU time at %d Hz", label, n, elapsed, hz)
    end
    local share = c[label] and 100 * c[label].self / n or 0
    print(string.format("%s at %d Hz: %.1f%% of %d samples", label, hz, share, n))
    -- The C function holds ~95% of the time; 4.5 binomial sigma below 90% never fails by chance
    -- (80% at 1000 Hz, where a collapsed long call would drop far below).
    local floor = 100 * (0.9 - 4.5 * math.sqrt(0.09 / math.max(n, 1)))
    H.check(share >= floor, "%s at %d Hz: only %.1f%% self of %d samples (floor %.1f%%)", label, hz, share, n, floor)
    H.check_invariants(profiler, label)
  end
end
-- No "?" where a name exists: the searchers require runs through have no name but their place
-- in package.searchers (package.loaders in 5.1), and the C function at the bottom of the main
-- thread is the interpreter's entry (lua.c's pmain), named "host entry".
do
  local path, cpath = package.path, package.cpath
  package.path, package.cpath = string.rep("/nonexistent/a/b/?.lua;", 300), string.rep("/nonexistent/a/b/?.so;", 300)
  profiler.statprof(function() for i = 1, 300 do pcall(require, "no_such_module_" .. i) end end, {hz = 10000, display = false})
  package.path, package.cpath = path, cpath
  local counts = H.counts(profiler)
  local list = package.searchers and "package.searchers[" or "package.loaders["
  local searchers = 0
  for label, c in pairs(counts) do
    H.check(label:sub(1, 1) ~= "?", "a function unnamed: %s", label)
    if label:sub(1, #list) == list then searchers = searchers + c.self end
  end
  -- (5.4 on: a C function that runs at a tick gets its time there; before 5.4, the C functions
  -- below a Lua frame are seen only as the stack it returns to, here require.)
  if _VERSION >= "Lua 5.4" then
    H.check(searchers > 0, "the searchers' time is named after their list (%s...)", list)
  end
  -- Started from the main chunk (statprof cuts the stack at its own frame).
  profiler.start_profiler({hz = 10000})
  local x = 0
  for i = 1, 3e6 do x = x + i end
  profiler.stop_profiler()
  counts = H.counts(profiler)
  H.check(counts["host entry [C]"] ~= nil and counts["?"] == nil and counts["? [C]"] == nil,
          "the interpreter's entry is named")
end
H.done()
