-- A long run's memory (lua5.4; bench.sh calls it): a program that loads thousands of chunks and
-- creates thousands of coroutines, run in a fresh process plain and in another at 10 kHz with
-- full stacks (the profiler loaded in both). The profiled process's peak resident memory may
-- exceed the plain one's by no more than the profile it keeps (profiler.stats().bytes). A
-- fixed part of it is code: the pages of the profiler and of the libraries it calls that a run
-- touches (0.3 MB), printed apart; --quick's small run shows it against a small profile.
--   lua5.4 -e "package.cpath='BUILD/lib/?.so;'..package.cpath" samples/bench/memory_growth.lua [--quick]
local profiler = require "profiler"
local mode = arg[1]
local quick = arg[#arg] == "--quick"
local chunks, coroutines, work = quick and 500 or 5000, quick and 500 or 5000, quick and 2000 or 4000

-- Each chunk defines its own functions (its own identities); each coroutine runs one of them.
-- The program collects its garbage itself, every 250 chunks or coroutines: Lua's own pacing
-- would start cycles wherever the allocations happen to fall, and the few the profiler makes
-- in Lua's heap shift them, moving the peak of that heap by up to a megabyte either way
-- (seen: 2.2 to 4.4 MB of growth for one profile, from a one-line change to the program).
-- With fixed collection points both runs' Lua heaps peak alike, and the difference is the
-- profiler's.
local function program()
  collectgarbage("stop")
  local fns = {}
  for i = 1, chunks do
    fns[i] = assert(load(string.format(
      "local function step_%d(x) for k = 1, %d do x = (x * 31 + k) %% 1000003 end return x end\n" ..
      "return function(x) return step_%d(x) end", i, work, i), "=chunk" .. i))()
    if i % 250 == 0 then collectgarbage() end
  end
  local sum = 0
  for i = 1, coroutines do
    local co = coroutine.wrap(function(x) for _ = 1, 3 do x = coroutine.yield(fns[1 + i % chunks](x)) end return x end)
    sum = sum + co(i) + co(1) + co(2) + co(3)
    if i % 250 == 0 then collectgarbage() end
  end
  collectgarbage("restart")
  return sum
end

-- Peak resident memory, and the file-backed part now: code pages of the profiler and of the
-- libraries it calls, faulted in once and never growing with the run.
local function resident_bytes()
  local peak, file
  for line in io.lines("/proc/self/status") do
    peak = peak or tonumber(line:match("^VmHWM:%s+(%d+) kB"))
    file = file or tonumber(line:match("^RssFile:%s+(%d+) kB"))
  end
  return peak * 1024, file * 1024
end

if mode == "plain" then
  program()
  print(string.format("%d %d 0", resident_bytes()))
  return
elseif mode == "profiled" then
  profiler.statprof(program, { hz = 10000, full_stacks = true, display = false })
  local s = profiler.stats()
  local peak, file = resident_bytes()
  print(peak, file, s.bytes, s.samples, s.functions)
  return
end

-- The driver: this same command line again, once per mode.
local cmd = {}
for i = -1, -10, -1 do
  if arg[i] == nil then break end
  table.insert(cmd, 1, string.format("%q", arg[i]))
end
local function run(which)
  local pipe = assert(io.popen(table.concat(cmd, " ") .. " " .. string.format("%q", arg[0]) .. " " .. which ..
                               (quick and " --quick" or "")))
  local out = pipe:read("a")
  assert(pipe:close(), "the " .. which .. " run failed: " .. out)
  local peak, file, kept, samples, functions = out:match("^(%d+)%s+(%d+)%s+(%d+)%s*(%d*)%s*(%d*)")
  return tonumber(peak), tonumber(file), tonumber(kept), tonumber(samples), tonumber(functions)
end
local plain, plain_file = run("plain")
local profiled, profiled_file, kept, samples, functions = run("profiled")
local growth, code = profiled - plain, profiled_file - plain_file
print(string.format("== a long run's memory: %d chunks, %d coroutines, 10 kHz with full stacks, fresh processes", chunks, coroutines))
print(string.format("peak resident: plain %.1f MB, profiled %.1f MB; the profile keeps %.1f MB (%d samples, %d functions)",
                    plain / 1e6, profiled / 1e6, kept / 1e6, samples, functions))
print(string.format("growth beyond the plain run: %.2f MB = data %.2f MB (%s the %.2f MB the profile keeps) + code pages %.2f MB",
                    growth / 1e6, (growth - code) / 1e6, growth - code <= kept and "within" or "MORE than", kept / 1e6,
                    code / 1e6))
