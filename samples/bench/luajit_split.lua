-- The LuaJIT rows' workload: heavy does three times the work of light, each in its own loop
-- (so that a leaf-only profiler such as jit.p sees the split too). Prints its own CPU time.
local function heavy(n) local x = 0 for i = 1, 3 * n do x = x + i % 7 end return x end
local function light(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local n, rounds = tonumber(arg and arg[1]) or 2000000, tonumber(arg and arg[2]) or 20
local t0 = os.clock()
local s = 0
for _ = 1, rounds do s = s + heavy(n) + light(n) end
io.stderr:write(string.format("work_seconds %.6f %d\n", os.clock() - t0, s % 10))
