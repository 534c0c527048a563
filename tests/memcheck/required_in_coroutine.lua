-- The module required from a coroutine that is then dropped and collected, then runs in every
-- mode and the state closes: nothing the sampler keeps may outlive its state or die before it
-- (Lua 5.1 names no main thread: the coroutine stands in until the main one enters).
-- Run under valgrind by tests/CMakeLists.txt for each Lua's module: any memcheck error fails.
local profiler
local co = coroutine.create(function() profiler = require "profiler" end)
assert(coroutine.resume(co))
co = nil
collectgarbage()
collectgarbage()
local function work()
  local x, t = 0, {}
  for i = 1, 200000 do x = x + i % 7 end
  for i = 1, 20000 do t[i] = {} end
  return x
end
local samples = 0
for _, opts in ipairs{{hz = 1000}, {hz = 1000, count_calls = true}, {gc = true}, {alloc = 4096}} do
  opts.display = false
  profiler.statprof(work, opts)
  samples = samples + profiler.sample_count()
  collectgarbage()
end
print("ok", samples)  -- under valgrind the clock-driven runs may get no sample: memory is the point
