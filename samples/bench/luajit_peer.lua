-- LuaJIT's built-in profiler on bench.lua's workloads, run by bench.lua under luajit:
--   luajit samples/bench/luajit_peer.lua [--quick] rounds
-- What `luajit -jp=fiN` does: jit.profile sampling every N ms with jit.p's per-sample work
-- (one stack dump and a count per sample). The ratio is LuaJIT profiled / LuaJIT plain (LuaJIT
-- is far faster than Lua 5.4, so only its own ratio compares), the rate its samples per second.
-- jit.p itself is not called: in LuaJIT 2.1.0-beta3 a sample delivered after its stop() finds
-- its tables gone and panics the VM (jit/p.lua:108), which no pcall catches.
local quick, rounds = false, 7
for _, a in ipairs(arg) do
  if a == "--quick" then quick = true else rounds = tonumber(a) end
end
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local W = dofile(here .. "/workloads.lua")
local w = W.load(quick and W.quick_scale or 1)
local profile = require "jit.profile"

local median = W.median

local header = string.format("%-12s", "config")
for _, wl in ipairs(w.overhead) do header = header .. string.format(" %11s", wl[1]) end
print(header .. string.format(" %8s %10s", "median", "rate Hz"))
-- LuaJIT runs these workloads in milliseconds: each run repeats its workload to at least 0.2 s
-- of CPU, so a run holds some ten samples even at the ~50 Hz the kernel gives when 100 is asked.
local function repeated(fn)
  local reps, t0 = 0, os.clock()
  repeat fn(); reps = reps + 1 until os.clock() - t0 >= 0.2  -- also compiles its traces
  return function() for _ = 1, reps do fn() end end
end

-- One profiled run as jit.p's function-level mode makes it; returns the samples taken.
local function profiled_run(ms, run)
  local counts, n = {}, 0
  profile.start("fi" .. ms, function(thread, samples)
    local key = profile.dumpstack(thread, "f", 1)
    counts[key] = (counts[key] or 0) + samples
    n = n + samples
  end)
  run()
  profile.stop()
  return n
end

for _, ms in ipairs({10, 1}) do
  local line, ratios, worst_rate = string.format("%-12s", "luajit " .. (1000 / ms)), {}, nil
  for _, wl in ipairs(w.overhead) do
    local run = repeated(wl[2])
    local plain, profiled, samples = {}, {}, 0
    for _ = 1, rounds do
      local t0 = os.clock(); run(); plain[#plain + 1] = os.clock() - t0
      t0 = os.clock()
      samples = samples + profiled_run(ms, run)
      profiled[#profiled + 1] = os.clock() - t0
    end
    local ratio = median(profiled) / median(plain)
    ratios[#ratios + 1] = ratio
    local seconds = 0
    for _, t in ipairs(profiled) do seconds = seconds + t end
    local r = samples / seconds
    if not worst_rate or math.abs(r - 1000 / ms) > math.abs(worst_rate - 1000 / ms) then worst_rate = r end
    line = line .. string.format(" %11.3f", ratio)
  end
  print(line .. string.format(" %8.3f %10.0f", median(ratios), worst_rate))
end
