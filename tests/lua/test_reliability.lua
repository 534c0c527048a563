-- What the profiler promises beyond the torture suite: runs that end by error, by exit or by
-- yielding still end cleanly; the program's own hooks keep working while calls are counted;
-- no timer outlives a run; coroutine.close is tracked.
local H = dofile("harness.lua")
local profiler = require "profiler"

local read = H.read
-- A statprof flat report (an empty run prints Guile's own line for it).
local function is_report(text)
  return text ~= nil and (text:find("Sample count:", 1, true) or text:find("No samples recorded.", 1, true)) ~= nil
end
local function timers()  -- POSIX timers this process holds
  local n = 0
  for _ in io.lines("/proc/self/timers") do n = n + 1 end
  return n
end
local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local base_timers = timers()

-- statprof is yieldable: fn may yield across it, and the run goes on when resumed.
do
  local co = coroutine.wrap(function()
    return profiler.statprof(function()
      local got = coroutine.yield("first")
      H.spin(3e5)
      local again = coroutine.yield("second")
      return got, again
    end, {hz = 1000, display = false})
  end)
  H.check(co() == "first", "statprof: first yield")
  H.check(profiler.active(), "statprof: still running while its coroutine is suspended")
  H.check(co("a") == "second", "statprof: second yield")
  local r1, r2 = co("b")
  H.check(r1 == "a" and r2 == "b", "statprof: results after yields (%s %s)", r1, r2)
  H.check(not profiler.active(), "statprof: stopped when fn returned")
  -- loop > 1 with yields in each call.
  local n = 0
  local lp = coroutine.wrap(function() return profiler.statprof(function() n = n + 1; coroutine.yield(n) end, {loop = 3, display = false}) end)
  H.check(lp() == 1 and lp() == 2 and lp() == 3 and select("#", lp()) == 0, "statprof loop=3 with yields")
  -- with_sampling yields too.
  profiler.start_profiler{hz = 1000, start_sampling = false}
  local ws = coroutine.wrap(function() return profiler.with_sampling(function(x) return coroutine.yield(x) + 1 end, 41) end)
  H.check(ws() == 41 and ws(1) == 2, "with_sampling: yields across it")
  H.check(profiler.status() == "suspended", "with_sampling: suspended after (%s)", profiler.status())
  profiler.stop_profiler()
end

-- A run that raises still writes the report it was asked for, and the error is unchanged.
do
  local path = dir .. "/err.txt"
  local obj = {}
  local ok, e = pcall(profiler.statprof, function() H.spin(2e5) error(obj) end, {hz = 1000, file = path})
  H.check(not ok and e == obj, "error object passes through unchanged")
  local text = read(path)
  H.check(is_report(text), "report written on error:\n%s", text)
  H.check(timers() == base_timers, "no timer left after an error (%d, was %d)", timers(), base_timers)
end

-- os.exit inside a profiled function: the report still comes out, with and without closing.
for _, close in ipairs{"false", "true"} do
  local path = dir .. "/exit_" .. close .. ".txt"
  local script = dir .. "/exit.lua"
  local f = assert(io.open(script, "w"))
  f:write(string.format([[
    package.cpath = %q
    local profiler = require "profiler"
    profiler.statprof(function() local s = 0 for i = 1, 2e6 do s = s + i end os.exit(3, %s) end, {hz = 1000, file = %q})
  ]], H.cpath, close, path))
  f:close()
  local _, status = H.run(H.lua .. " " .. script)
  H.check(status == 3, "os.exit(3, %s): status %s", close, status)
  local text = read(path)
  H.check(is_report(text), "os.exit(3, %s): report written:\n%s", close, text)
end

-- The program's debug.sethook while calls are counted: its hook fires, counts stay exact,
-- gethook reports what it set, and the profiler's hook comes back when it removes its own.
do
  local calls, seen = 0, {}
  local function body()
    debug.sethook(function() calls = calls + 1 end, "c")
    fib(15)
    local h, mask, count = debug.gethook()
    seen[#seen + 1] = string.format("%s %s %s", type(h), mask, count)
    debug.sethook()
    seen[#seen + 1] = tostring(debug.gethook())
    fib(20)
  end
  body()
  local plain_calls = calls
  calls = 0
  profiler.statprof(body, {count_calls = true, display = false})
  H.check(plain_calls > 1973 and calls == plain_calls, "program call hook: %d events profiled, %d plain", calls, plain_calls)
  H.check(seen[1] == "function c 0" and seen[3] == seen[1], "gethook while counting: %s / %s", seen[1], seen[3])
  H.check(seen[2] == "nil" and seen[4] == "nil", "gethook after removal while counting: %s", seen[4])
  local fibc = H.find(H.counts(profiler), "fib")
  H.check(fibc and fibc.calls == 1973 + 21891, "counts exact with the program's hook (%s)", fibc and fibc.calls)
  H.check(debug.gethook() == nil, "no hook after the run")
end

-- coroutine.close: __close handlers run in the coroutine and are sampled there.
do
  local function closing_work() H.spin(3e6) end
  profiler.statprof(function()
    local co = coroutine.create(function()
      local guard <close> = setmetatable({}, {__close = function() closing_work() end})
      coroutine.yield()
    end)
    coroutine.resume(co)
    H.check(coroutine.close(co) == true, "close returns true")
  end, {hz = 1000, display = false, full_stacks = true})
  local stacks = profiler.fetch_stacks()
  local under_close = 0
  for _, st in ipairs(stacks) do
    local s = table.concat(st, " <- ")
    if s:find("closing_work", 1, true) then
      under_close = under_close + 1
      H.check(s:find("coroutine.close", 1, true), "closing work stitched under coroutine.close: %s", s)
    end
  end
  H.check(under_close > 0, "samples inside __close run by coroutine.close (%d)", under_close)
end

-- Thousands of start/stop cycles leave no timer and no hook.
for i = 1, 2000 do
  profiler.start_profiler{hz = 10000, count_calls = i % 2 == 0, alloc = i % 3 == 0 and 1024 or nil, gc = i % 5 == 0}
  fib(5)
  profiler.stop_profiler()
end
H.check(timers() == base_timers, "no timer left after 2000 runs (%d)", timers())
H.check(debug.gethook() == nil, "no hook left after 2000 runs")

-- Coroutines that set their own hooks die and are collected while calls are counted; their
-- memory is reused. Stopping touches only threads that are alive (it called lua_sethook on
-- freed states and crashed), and a live coroutine gets back the hook it had.
do
  for _ = 1, 3 do
    profiler.reset(0, 1000, true, true)
    profiler.start()
    for _ = 1, 2000 do
      local co = coroutine.create(function() debug.sethook(function() end, "l") coroutine.yield() end)
      coroutine.resume(co)
    end
    collectgarbage()
    collectgarbage()
    local reuse = {}
    for i = 1, 30000 do reuse[i] = {i, tostring(i)} end
    profiler.stop()
    profiler.start()
    profiler.stop()
  end
  local function hooked_after_stop(profiled)
    local calls = 0
    local co = coroutine.create(function() coroutine.yield() fib(5) end)
    if profiled then profiler.reset(0, 1000, true) profiler.start() end
    local hook = function() calls = calls + 1 end
    debug.sethook(co, hook, "c")
    coroutine.resume(co)
    if profiled then profiler.stop() end
    local h, mask = debug.gethook(co)
    coroutine.resume(co)
    return h == hook, mask, calls
  end
  local same, mask, calls = hooked_after_stop(true)
  local _, _, want = hooked_after_stop(false)
  H.check(same and mask == "c" and calls == want, "a live coroutine keeps its hook after stop: %s %s, %d calls of %d",
          tostring(same), tostring(mask), calls, want)
end

-- A hook set on a coroutine before the run sees, during a counting run, exactly the events and
-- arguments it sees without the profiler (its currentline came back filled in by the profiler).
do
  local function run(co)
    local seen = {}
    debug.sethook(co, function(event, line)
      local i = debug.getinfo(2, "Sl")
      seen[#seen + 1] = ("%s=%s@%s:%d"):format(event, tostring(line), i.short_src, i.currentline)
    end, "lcr")
    return function() coroutine.resume(co, 4) coroutine.resume(co) debug.sethook(co) return table.concat(seen, " ") end
  end
  local body = function(n) local x = fib(n) coroutine.yield(x) return fib(3) end
  local want = run(coroutine.create(body))()
  for _, opts in ipairs({{1000, true}, {10000, true, true}, {10000, false}}) do
    local finish = run(coroutine.create(body))  -- made and hooked before start
    profiler.reset(0, opts[1], opts[2], opts[3])
    profiler.start()
    local got = finish()
    profiler.stop()
    H.check(got == want, "hook events with %d Hz, calls %s:\n%s\ninstead of\n%s", opts[1], tostring(opts[2]), got, want)
  end
end

-- Tail calls: functions that tail-call each other do the work, and hold its samples (the
-- samples were charged to the frame below, the driver).
do
  local a, b
  function a(n) if n == 0 then return 0 end return b(n - 1) end
  function b(n) if n == 0 then return 0 end return a(n - 1) end
  local function driver() for _ = 1, 400 do a(10000) end end
  for _, calls in ipairs({false, true}) do
    profiler.statprof(driver, {hz = 1000, count_calls = calls, display = false})
    local n = profiler.sample_count()
    local function self_of(f) local cd = profiler.proc_call_data(f) return cd and profiler.call_data_self_samples(cd) or 0 end
    local share = (self_of(a) + self_of(b)) / math.max(n, 1)
    H.check(n >= 20 and share >= 0.85, "tail calls (calls %s): a and b hold %.0f%% self of %d samples",
            tostring(calls), 100 * share, n)
  end
end

-- Memory: a function costs the profiler bytes, not its chunk's text (a chunk loaded from a
-- string has the whole text as its source, and each function kept a copy: ~9 KB each).
do
  local pad = ("-- padding padding padding padding padding padding padding padding\n"):rep(150)
  local function work()
    for i = 1, 1000 do
      assert(load(pad .. "local function f() local x = 0 for j = 1, 3000 do x = x + j end return x end\nreturn f() + " .. i))()
    end
  end
  for _, calls in ipairs({false, true}) do
    profiler.statprof(work, {hz = 10000, count_calls = calls, display = false})
    local st = profiler.stats()
    H.check(st.functions >= 100 and st.samples > 0 and st.stacks > 0, "stats: %d functions, %d samples, %d stacks",
            st.functions, st.samples, st.stacks)
    H.check(st.bytes == st.profile_bytes + st.sampler_bytes, "stats: bytes is the sum of its parts")
    H.check(st.bytes / st.functions < 2048, "calls %s: %.0f bytes per function (%d functions, %d bytes)",
            tostring(calls), st.bytes / st.functions, st.functions, st.bytes)
    H.check(st.bytes < 1000 * #pad / 4, "calls %s: %d bytes held for 1000 chunks of %d bytes", tostring(calls), st.bytes, #pad)
  end
end

os.execute("rm -rf " .. dir)
H.done()
