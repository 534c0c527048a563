-- A long run's memory (lua5.4; bench.sh calls it): a program that loads thousands of chunks and
-- creates thousands of coroutines, run in a fresh process plain and in another at 10 kHz with
-- full stacks (the profiler loaded in both). The profiled process's peak resident memory may
-- exceed the plain one's by no more than the profile it keeps (profiler.stats().bytes). About
-- a megabyte is fixed (the timer, the sampler's tables, code pages touched): --quick's small
-- run shows it.
--   lua5.4 -e "package.cpath='BUILD/lib/?.so;'..package.cpath" samples/bench/memory_growth.lua [--quick]
local profiler = require "profiler"
local mode = arg[1]
local quick = arg[#arg] == "--quick"
local chunks, coroutines, work = quick and 500 or 5000, quick and 500 or 5000, quick and 2000 or 4000

-- Each chunk defines its own functions (its own identities); each coroutine runs one of them.
local function program()
  local fns = {}
  for i = 1, chunks do
    fns[i] = assert(load(string.format(
      "local function step_%d(x) for k = 1, %d do x = (x * 31 + k) %% 1000003 end return x end\n" ..
      "return function(x) return step_%d(x) end", i, work, i), "=chunk" .. i))()
  end
  local sum = 0
  for i = 1, coroutines do
    local co = coroutine.wrap(function(x) for _ = 1, 3 do x = coroutine.yield(fns[1 + i % chunks](x)) end return x end)
    sum = sum + co(i) + co(1) + co(2) + co(3)
  end
  return sum
end

local function peak_resident_bytes()
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^VmHWM:%s+(%d+) kB")
    if kb then return tonumber(kb) * 1024 end
  end
end

if mode == "plain" then
  program()
  print(peak_resident_bytes(), 0)
  return
elseif mode == "profiled" then
  profiler.statprof(program, { hz = 10000, full_stacks = true, display = false })
  local s = profiler.stats()
  print(peak_resident_bytes(), s.bytes, s.samples, s.functions)
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
  local peak, kept, samples, functions = out:match("^(%d+)%s+(%d+)%s*(%d*)%s*(%d*)")
  return tonumber(peak), tonumber(kept), tonumber(samples), tonumber(functions)
end
local plain = run("plain")
local profiled, kept, samples, functions = run("profiled")
print(string.format("== a long run's memory: %d chunks, %d coroutines, 10 kHz with full stacks, fresh processes", chunks, coroutines))
print(string.format("peak resident: plain %.1f MB, profiled %.1f MB; the profile keeps %.1f MB (%d samples, %d functions)",
                    plain / 1e6, profiled / 1e6, kept / 1e6, samples, functions))
print(string.format("growth beyond the plain run: %.1f MB, %s the profile kept", (profiled - plain) / 1e6,
                    profiled - plain <= kept and "within" or "MORE than"))
