-- Error paths: the original error passes through unchanged, and nothing is left half-on.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function spin_then_fail(err) H.spin(300000); error(err, 0) end

-- A table error object comes back as the very same table.
local obj = {code = 42}
local ok, e = pcall(profiler.statprof, function() spin_then_fail(obj) end, 1000)
H.check(not ok and e == obj, "the error object is the same table")
H.check(not profiler.active(), "the profiler is off after an error")
H.check(debug.gethook() == nil, "no hook is left on the state after an error: %s", tostring(debug.gethook()))

-- Non-string, non-table error values too.
for _, v in ipairs({false, 17, 2.5}) do
  local ok2, e2 = pcall(profiler.statprof, function() error(v) end, 1000)
  H.check(not ok2 and e2 == v, "error value %s passes unchanged (got %s)", tostring(v), tostring(e2))
end

-- A string error keeps its position, and a message handler still sees the failing frames.
local function deep_failure() error("deep trouble") end
local traceback
local ok3, msg = xpcall(profiler.statprof, function(m) traceback = debug.traceback(m, 2); return m end,
                        function() deep_failure() end, 1000)
H.check(not ok3 and msg:find("test_errors.lua:%d+: deep trouble$") ~= nil, "message with position: %s", msg)
H.check(traceback and traceback:find("deep_failure", 1, true) ~= nil,
        "the traceback still shows the failing function:\n%s", traceback)

-- After an error a new run works.
H.check(profiler.statprof(function() return "again" end, {display = false}) == "again", "a run after an error works")

-- Bad arguments: clear errors, and the profiler stays off.
local function expect_error(pattern, f, ...)
  local okx, m = pcall(f, ...)
  H.check(not okx and tostring(m):find(pattern) ~= nil, "expected error matching %q, got %s", pattern, tostring(m))
  H.check(not profiler.active(), "profiler off after a bad call (%s)", pattern)
  H.check(debug.gethook() == nil, "no hook after a bad call (%s)", pattern)
end
local noop = function() end
expect_error("hz must be a number in %(0, 100000%], got 0", profiler.statprof, noop, 0)
expect_error("got %-5", profiler.statprof, noop, -5)
expect_error("got nan", profiler.statprof, noop, 0 / 0)
expect_error("got 1000000", profiler.statprof, noop, 1e6)
expect_error("got inf", profiler.statprof, noop, math.huge)
expect_error("number or table expected, got string", profiler.statprof, noop, "fast")
expect_error("function expected, got no value", profiler.statprof)
expect_error("function expected, got number", profiler.statprof, 42)
expect_error("unknown option 'hx'", profiler.statprof, noop, {hx = 10})
expect_error("option 'clock' must be \"cpu\" or \"wall\", got \"gpu\"", profiler.statprof, noop, {clock = "gpu"})
expect_error("option 'loop' must be an integer >= 1", profiler.statprof, noop, {loop = 0})
expect_error("option 'count_calls' must be a boolean, got 1", profiler.statprof, noop, {count_calls = 1})
-- The run options' checks are the ones luaprof and the C API use (run_options.cpp).
expect_error("option 'max_samples' must be an integer >= 0 %(0: no bound%), got %-1", profiler.statprof, noop, {max_samples = -1})
expect_error("option 'hz' must be a number in %(0, 100000%] or false, got \"fast\"", profiler.statprof, noop, {hz = "fast"})
expect_error("option 'alloc' must be true, false or the mean bytes", profiler.statprof, noop, {alloc = 0.5})
expect_error("option 'gc' must be a boolean, got a table", profiler.statprof, noop, {gc = {}})
expect_error("at least 10 microseconds", profiler.reset, 0, 0, false)
expect_error("at least 10 microseconds", profiler.reset, 0, 0 / 0, false)

-- A second start while active is an error, and leaves the first run going.
profiler.reset(0, 1000, false)
profiler.start()
local ok4, m4 = pcall(profiler.start)
H.check(not ok4 and m4:find("already active", 1, true), "second start: %s", tostring(m4))
H.check(profiler.active(), "the first run is still on")
local ok5, m5 = pcall(profiler.statprof, noop)
H.check(not ok5 and m5:find("already active", 1, true), "statprof while active: %s", tostring(m5))
local ok6, m6 = pcall(profiler.reset, 0, 1000, false)
H.check(not ok6 and m6:find("while the profiler is active", 1, true), "reset while active: %s", tostring(m6))
profiler.stop()
H.check(not profiler.active() and debug.gethook() == nil, "stop leaves nothing on")
profiler.stop()  -- stopping twice is harmless

-- The program's own hook survives a profiled run and keeps firing during it.
local lines = 0
debug.sethook(function() lines = lines + 1 end, "l")
profiler.statprof(function() for i = 1, 200 do H.spin(2000) end end, {hz = 10000, display = false})
local after = lines
local hook, mask = debug.gethook()
debug.sethook()
H.check(hook ~= nil and mask == "l", "the program's line hook is back after the run (%s %s)", tostring(hook), tostring(mask))
H.check(after > 1000, "the program's line hook kept firing during the run (%d lines)", after)
H.check(profiler.sample_count() > 0, "and the profiler sampled meanwhile (%d)", profiler.sample_count())

-- An unwritable report file is a clear error naming the file.
local ok7, m7 = pcall(profiler.statprof, noop, {file = "/nonexistent-dir/report.txt"})
H.check(not ok7 and m7:find("cannot write '/nonexistent-dir/report.txt'", 1, true), "unwritable file: %s", tostring(m7))
local ok8, m8 = pcall(profiler.fetch_stacks)
H.check(not ok8 and m8:find("full_stacks=true", 1, true), "fetch_stacks without full stacks: %s", tostring(m8))
H.done()
