-- A program to be profiled while it runs: hot and cold do the same work per iteration, 3:1.
-- It runs until the file arg[1] exists (at most arg[2] seconds), checks that every round
-- computed the same value, and prints it: the result must not depend on being profiled.
-- With arg[3], profiler.serve{address = arg[3]} serves it from inside (the module), the
-- address going to arg[3] .. ".addr", and the file arg[1] .. ".stop_serving" stops serving;
-- served so, each round is a frame (profiler.frame()), every 10th twice as long.
local function hot(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function cold(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local stop, limit, serve = arg[1], tonumber(arg[2]) or 60, arg[3]
local function exists(path) local f = io.open(path) if f then f:close() end return f ~= nil end
local served = false
if serve then
  local profiler = require "profiler"
  local f = assert(io.open(stop .. ".addr", "w"))
  f:write(profiler.serve{address = serve, hz = 1000}) f:close()
  served = true
end
local first, rounds = nil, 0
local start = os.time()
repeat
  for _ = 1, 5 do
    for _ = 1, (served and rounds % 10 == 9) and 2 or 1 do
      local v = hot(300000) + cold(100000)
      first = first or v
      assert(v == first, "a round computed another value")
    end
    rounds = rounds + 1
    if served then require("profiler").frame() end
  end
  if served and exists(stop .. ".stop_serving") then
    require("profiler").stop_serving()
    served = false
    print("stopped serving")
  end
until exists(stop) or os.time() - start > limit
print("result", first)
