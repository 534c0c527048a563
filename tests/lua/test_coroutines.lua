-- Samples taken inside a coroutine belong to the coroutine's functions, stitched under the
-- code that resumed it (FORMATS 0.6); the coroutine library keeps Lua 5.4's exact behaviour.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function produce_item(n) local x = 0 for i = 1, 2 * n do x = x + i % 7 end return x end
local function consume_item(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
-- Fine rounds (far below the 1 ms period) and ~1 s of work: ~1000 samples, a binomial
-- standard deviation of 1.5 points.
local ROUNDS = 12000
local function producer() for i = 1, ROUNDS do produce_item(5000); coroutine.yield(i) end end
-- The producer is called from C (resume), so it has no name: find it by its line.
local producer_label = "(" .. debug.getinfo(1, "S").short_src .. ":" .. debug.getinfo(producer, "S").linedefined .. ")"

local function run(make)
  local next_item = make(producer)
  local s = 0
  for _ = 1, ROUNDS do s = s + next_item(); consume_item(5000) end
  return s
end
local via_wrap = function(f) return coroutine.wrap(f) end
local via_resume = function(f)
  local co = coroutine.create(f)
  return function() local ok, v = coroutine.resume(co); assert(ok, v); return v end
end

for name, make in pairs({wrap = via_wrap, resume = via_resume}) do
  local sum = profiler.statprof(function() local s = run(make); return s end, {hz = 1000, full_stacks = true, display = false})
  H.check(sum == ROUNDS * (ROUNDS + 1) / 2, "%s: the coroutine's values came through (%s)", name, sum)
  local n = profiler.sample_count()
  local p_self, c_self, stitched, wrong = 0, 0, 0, 0
  for _, stack in ipairs(profiler.fetch_stacks()) do
    local leaf, joined = stack[1], table.concat(stack, " <- ")
    if leaf:find("^produce_item") then
      p_self = p_self + stack.weight
      -- leaf <- producer <- (resume or wrapped function) [C] <- ... <- run
      if joined:find(producer_label, 1, true) and joined:find("[C]", 1, true) and joined:find("run (", 1, true) then
        stitched = stitched + stack.weight
      end
    elseif leaf:find("^consume_item") then
      c_self = c_self + stack.weight
      if joined:find(producer_label, 1, true) then wrong = wrong + stack.weight end
    end
  end
  local ps = 100 * p_self / n
  print(string.format("%s: %d samples, producer's work %.1f%% (expected 66.7), stitched %d of %d",
                      name, n, ps, stitched, p_self))
  -- 4.5 binomial standard deviations: these shared machines run several tests at once.
  local tolerance = math.max(5, 4.5 * 100 * math.sqrt((2 / 9) / math.max(n, 1)))
  local within, why = math.abs(ps - 200 / 3) <= tolerance, ""
  if not within then
    -- Whether the work itself kept its 2:1 in this process, timed unprofiled right after.
    local c0 = os.clock()
    for _ = 1, 2000 do produce_item(5000) end
    local c1 = os.clock()
    for _ = 1, 2000 do consume_item(5000) end
    why = string.format(": producer %d, consumer %d of %d samples; unprofiled the work is %.2f:1 now; %s",
                        p_self, c_self, n, (c1 - c0) / math.max(os.clock() - c1, 1e-9), H.health_line(profiler))
  end
  H.check(within, "%s: producer share %.1f%% (tolerance %.1f)%s", name, ps, tolerance, why)
  H.check(stitched == p_self, "%s: %d of %d coroutine samples stitched under the resumer", name, stitched, p_self)
  H.check(wrong == 0, "%s: %d resumer samples blamed on the coroutine", name, wrong)
  H.check_invariants(profiler, name)
end

-- Which coroutine runs is found from the frames that resume it: a sampling run leaves the
-- coroutine library as it is, and so does a counting run (a resumed thread gets the counting
-- hook from the call that resumes it), unless a program hook must pass to new threads. A run
-- that excludes a coroutine needs every switch told: it installs its own functions for the run
-- and puts the library's back at its end.
do
  local lib = {resume = coroutine.resume, wrap = coroutine.wrap, create = coroutine.create, close = coroutine.close}
  local function library_is_stock()
    for k, f in pairs(lib) do if coroutine[k] ~= f then return false end end
    return true
  end
  profiler.start_profiler{hz = 1000}
  H.check(library_is_stock(), "a sampling run leaves the coroutine library as it is")
  profiler.stop()
  profiler.start_profiler{count_calls = true}
  H.check(library_is_stock(), "a counting run leaves the coroutine library as it is")
  profiler.stop()
  debug.sethook(function() end, "r")
  profiler.start_profiler{count_calls = true}
  H.check(coroutine.resume ~= lib.resume and coroutine.wrap ~= lib.wrap,
          "a counting run over a program hook tells every switch")
  profiler.stop()
  debug.sethook()
  H.check(library_is_stock(), "the library's own functions are back after the counting run")
  profiler.start_profiler{count_calls = true}
  debug.sethook(function() end, "r")
  H.check(coroutine.resume ~= lib.resume, "a program hook set during a counting run tells every switch from then on")
  profiler.stop()
  debug.sethook()
  H.check(library_is_stock(), "the library's own functions are back after that run")
  profiler.start_profiler{hz = 1000}
  local co = coroutine.create(function() end)
  profiler.profile_process_p(co, false)
  H.check(coroutine.resume ~= lib.resume, "excluding a coroutine during a run tells every switch from then on")
  profiler.stop()
  profiler.profile_process_p(co, true)
  H.check(library_is_stock(), "the library's own functions are back after the run")
end

-- The coroutine library behaves exactly as without the profiler: the same script, run by the
-- stock interpreter with and without `require "profiler"`, prints the same thing.
local behaviours = [[
local function show(...) local t = table.pack(...) for i = 1, t.n do t[i] = tostring(t[i]) end print(table.concat(t, " | ")) end
show(pcall(coroutine.resume, 42))
show(pcall(coroutine.wrap, 42))
show(pcall(coroutine.create))
local co = coroutine.create(function(a, b) local c = coroutine.yield(a + b); error("boom " .. c) end)
show(coroutine.resume(co, 1, 2)); show(coroutine.resume(co, "x")); show(coroutine.resume(co)); show(coroutine.status(co))
local w = coroutine.wrap(function() error("inside wrap") end)
show(pcall(w))
local w2 = coroutine.wrap(function() error({code = 7}) end)
local ok, e = pcall(w2); show(ok, type(e), e.code)
local closed = {}
local w3 = coroutine.wrap(function()
  local x <close> = setmetatable({}, {__close = function(_, err) closed[#closed + 1] = tostring(err) end})
  coroutine.yield(1); error("after yield")
end)
show(w3()); show(pcall(w3)); show(#closed, closed[1])
show(pcall(w3))
local co2 = coroutine.wrap(function(...) return select("#", ...), ... end)
show(co2(nil, nil, 3))
show(coroutine.isyieldable(), type(coroutine.running()), select(2, coroutine.running()))
local co3 = coroutine.create(function() show(coroutine.isyieldable(), coroutine.status(coroutine.running())) return pcall(function() return coroutine.yield("across pcall") end) end)
show(coroutine.resume(co3)); show(coroutine.resume(co3, "back")); show(coroutine.close(co3))
local co4 = coroutine.create(function() local y <close> = setmetatable({}, {__close = function() print("closed co4") end}) coroutine.yield() end)
coroutine.resume(co4); show(coroutine.close(co4)); show(coroutine.status(co4))
show(pcall(coroutine.resume, coroutine.running()))
local many = coroutine.wrap(function() return table.unpack({}, 1, 5000) end)
show(select("#", many()))
]]
local path = os.tmpname()
local f = assert(io.open(path, "w")); f:write(behaviours); f:close()
local plain = H.run(string.format("%s %s", H.lua, path))
local profiled_script = string.format(
  "package.cpath=%q; local p = require 'profiler'; p.start(); dofile(%q); p.stop()", H.cpath, path)
local profiled = H.run(string.format("%s -e %q", H.lua, profiled_script))
-- Counting calls: through the profiler's own coroutine functions.
local counted = H.run(string.format("%s -e %q", H.lua, (profiled_script:gsub("p%.start%(%)", "p.start_profiler{count_calls = true}"))))
os.remove(path)
-- Error messages name the chunk; both runs load the same file, so they match exactly.
H.check(plain == profiled, "coroutine behaviour differs under the profiler:\n--- plain\n%s--- profiled\n%s", plain, profiled)
H.check(plain == counted, "coroutine behaviour differs when calls are counted:\n--- plain\n%s--- counted\n%s", plain, counted)
H.check(#plain > 200, "the behaviour script ran (%d bytes of output)", #plain)
H.done()
