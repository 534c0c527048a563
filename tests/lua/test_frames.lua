-- Frame markers: profiler.frame() once per game frame; the "frames" report gives the average
-- frame and the slowest ones with what ran on top of the stack in each.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function update() local t0 = os.clock() while os.clock() - t0 < 0.004 do end end
local function hitch() local t0 = os.clock() while os.clock() - t0 < 0.040 do end end

profiler.statprof(function()
  for frame = 1, 8 do
    profiler.frame()
    update()
    if frame == 6 then hitch() end
  end
  profiler.frame()
end, {hz = 1000, full_stacks = true, display = false})

local path = os.tmpname()
profiler.report("frames", path)
local text = H.read(path)
os.remove(path)
H.check(text:find("8 frames, average", 1, true), "eight frames:\n%s", text)
-- The first listed (slowest) is frame 6, and hitch ran most in it.
local rank, index, rest = text:match("\n%s+(%d+)%s+(%d+)%s+[%d.]+%s+[%d.]+%s+([^\n]*)")
H.check(rank == "1" and index == "6", "slowest is frame 6:\n%s", text)
H.check(rest and rest:find("hitch", 1, true), "hitch on top of the slowest frame:\n%s", text)
-- Frames outside a run are not marked.
profiler.frame()
H.done()
