-- A small CPU-bound program with a known shape: `heavy` does about three times the work of
-- `light`, and both sit under `work`. Run it under the profiler:
--   build/bin/luaprof --hz 1000 samples/quickstart/work.lua
-- or from Lua:  profiler.statprof(function() work(20) end, 1000)

local function spin(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end

-- (Not `return spin(...)`: a tail call replaces the caller's frame, and so hides it.)
local function heavy(n) local r = spin(3 * n); return r end
local function light(n) local r = spin(n); return r end

function work(rounds)
  local total = 0
  for _ = 1, rounds do
    total = total + heavy(200000) + light(200000)
  end
  -- A long C call: its time belongs to string.rep, not to the Lua code around it.
  local s = string.rep("abc", 2000000)
  return total, #s
end

if ... ~= "--no-run" then
  local total, len = work(tonumber(arg and arg[1]) or 20)
  print(string.format("work done: total=%d, string of %d bytes", total, len))
end
