-- Overhead of sampling, call counting, GC and allocation sampling on CPU-bound workloads, as a
-- ratio to the unprofiled run, next to a pure-Lua debug.sethook profiler (the baseline people
-- write first).
-- Runs A (plain) and B (profiled) interleaved, A B A B ..., and compares medians, so a noisy
-- shared machine still gives a fair ratio. Usage, from the repository root:
--   lua5.4 -e "package.cpath='build/lib/?.so;'..package.cpath" samples/bench/overhead.lua [rounds]
local profiler = require "profiler"
local rounds = tonumber(arg and arg[1]) or 9

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function mixed()
  local t, s = {}, 0
  for i = 1, 200000 do t[i] = tostring(i % 977) end
  for i = 1, #t do s = s + #t[i] end
  table.sort(t)
  return s + fib(24)
end
local workloads = {
  {"fib(32)", function() return fib(32) end},
  {"mixed", function() local s = 0 for _ = 1, 3 do s = s + mixed() end return s end},
}

local function now() return os.clock() end  -- CPU seconds of this process
local function median(xs) table.sort(xs) return xs[(#xs + 1) // 2] end

-- The profiler people write first: a Lua count hook every 1000 instructions that records the
-- current function's source line.
local function hook_profile(fn)
  local counts = {}
  debug.sethook(function()
    local info = debug.getinfo(2, "S")
    local key = info.short_src .. ":" .. info.linedefined
    counts[key] = (counts[key] or 0) + 1
  end, "", 1000)
  fn()
  debug.sethook()
  return counts
end

local function measure(fn, opts)
  local plain, profiled, rate = {}, {}, {}
  for _ = 1, rounds do
    local t0 = now(); fn(); plain[#plain + 1] = now() - t0
    t0 = now()
    if opts == "hook" then hook_profile(fn)
    elseif opts and opts.gcprof then profiler.gcprof(fn, {display = false})
    else profiler.statprof(fn, opts) end
    profiled[#profiled + 1] = now() - t0
    if type(opts) == "table" and not opts.gcprof and opts.hz ~= false then
      rate[#rate + 1] = profiler.sample_count() / profiler.accumulated_time()
    end
  end
  return median(plain), median(profiled), #rate > 0 and median(rate) or 0
end

print(string.format("scriptprof overhead, %d interleaved rounds, medians of process CPU time", rounds))
print(string.format("%-10s %-6s %8s %10s %11s %8s %10s", "workload", "clock", "hz", "plain s", "profiled s", "ratio", "rate Hz"))
for _, w in ipairs(workloads) do
  for _, clock in ipairs({"cpu", "wall"}) do
    for _, hz in ipairs({100, 1000, 10000}) do
      local a, b, r = measure(w[2], {hz = hz, clock = clock, display = false})
      print(string.format("%-10s %-6s %8d %10.4f %11.4f %8.3f %10.1f", w[1], clock, hz, a, b, b / a, r))
    end
  end
  local others = {
    {"count_calls", {count_calls = true, display = false}},
    {"count_list", {count_list = {fib}, display = false}},
    {"gcprof", {gcprof = true}},
    {"alloc 64K", {hz = false, alloc = 65536, display = false}},
    {"all", {hz = 1000, count_calls = true, gc = true, alloc = 65536, display = false}},
    {"Lua hook", "hook"},
  }
  for _, o in ipairs(others) do
    local a, b, r = measure(w[2], o[2])
    print(string.format("%-10s %-15s %10.4f %11.4f %8.3f %10s", w[1], o[1], a, b, b / a, r > 0 and string.format("%.1f", r) or "-"))
  end
end
