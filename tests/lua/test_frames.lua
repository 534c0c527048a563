-- Frame markers: profiler.frame() at the end of each game frame (the first began with the run: N
-- marks, N frames); the "frames" report gives the average
-- frame and the slowest ones with what ran on top of the stack in each. The busy loops spend
-- their time in Lua (a bare os.clock loop is on top in os.clock, which is charged its time).
local profiler = require "profiler"
local H = dofile("harness.lua")

local function update() local t0 = os.clock() while os.clock() - t0 < 0.004 do for _ = 1, 2000 do end end end
local function hitch() local t0 = os.clock() while os.clock() - t0 < 0.040 do for _ = 1, 2000 do end end end

profiler.statprof(function()
  for frame = 1, 8 do
    update()
    if frame == 6 then hitch() end
    profiler.frame()
  end
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
-- slowest = N lists N frames; a bad N is refused naming the option.
path = os.tmpname()
profiler.report("frames", path, {slowest = 2})
text = H.read(path)
os.remove(path)
local rows = 0
for rank in text:gmatch("\n%s+(%d+)%s+%d+%s+[%d.]+%s+[%d.]+") do rows = rows + 1 end
H.check(rows == 2 and text:find("\n%s+1%s+6%s"), "two frames listed, frame 6 first:\n%s", text)
for _, bad in ipairs({0, -1, 2.5, "3"}) do
  local ok, err = pcall(profiler.report, "frames", nil, {slowest = bad})
  H.check(not ok and err:find("option 'slowest' must be a whole number", 1, true), "slowest=%s refused: %s",
          tostring(bad), tostring(err))
end
-- luaprof --style frames --slowest-frames 1: one frame listed, the hitch.
local script = os.tmpname()
local f = assert(io.open(script, "w"))
f:write([[
local profiler = require "profiler"
local function update() local t0 = os.clock() while os.clock() - t0 < 0.004 do for _ = 1, 2000 do end end end
local function hitch() local t0 = os.clock() while os.clock() - t0 < 0.040 do for _ = 1, 2000 do end end end
for frame = 1, 5 do update() if frame == 2 then hitch() end profiler.frame() end
]])
f:close()
local out, status = H.run(string.format("%s --hz 1000 --full-stacks --style frames --slowest-frames 1 %s", H.luaprof, script))
local listed = {}
for rank, index, top in out:gmatch("\n%s+(%d+)%s+(%d+)%s+[%d.]+%s+[%d.]+%s+([^\n]*)") do listed[#listed + 1] = {rank, index, top} end
H.check(status == 0 and out:find("5 frames, average", 1, true) and #listed == 1 and listed[1][2] == "2" and
        listed[1][3]:find("hitch", 1, true), "luaprof lists only the hitch frame:\n%s", out)
out, status = H.run(string.format("%s --slowest-frames x %s", H.luaprof, script))
H.check(status ~= 0 and out:find("--slowest-frames: 'x' is not an integer", 1, true), "bad --slowest-frames: %s", out)
os.remove(script)
-- Frames outside a run are not marked.
profiler.frame()
H.done()
