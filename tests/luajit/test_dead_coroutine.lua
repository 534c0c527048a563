-- A run started by the module's first use inside a coroutine that ends, and is collected,
-- before the run stops: stop() must not touch the dead coroutine (run by ctest under
-- valgrind's memcheck, which fails on an invalid read).
local co = coroutine.create(function() require("profiler").start_profiler({ hz = 1000 }) end)
assert(coroutine.resume(co))
co = nil
for _ = 1, 3 do collectgarbage() end
local t = {} for i = 1, 50000 do t[i] = { i } end  -- reuse the freed memory
local x = 0 for i = 1, 3e6 do x = x + i % 7 end
require("profiler").stop()
assert(jit.status(), "the JIT is on after the run")
print("stopped cleanly")
