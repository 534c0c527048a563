-- LuaJIT's built-in profiler on bench.lua's workloads, run by bench.lua under luajit:
--   luajit samples/bench/luajit_peer.lua [--quick] rounds
-- jit.p is what `luajit -jp=fiN` starts; its ratio is LuaJIT profiled / LuaJIT plain (LuaJIT is
-- far faster than Lua 5.4, so only its own ratio compares). The rate comes from jit.profile with
-- a callback that only counts, since jit.p does not say how many samples it took.
local quick, rounds = false, 7
for _, a in ipairs(arg) do
  if a == "--quick" then quick = true else rounds = tonumber(a) end
end
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local W = dofile(here .. "/workloads.lua")
local w = W.load(quick and 0.1 or 1)
local jp = require "jit.p"
local profile = require "jit.profile"

local function median(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  return s[math.floor((#s + 1) / 2)]
end

local header = string.format("%-12s", "config")
for _, wl in ipairs(w.overhead) do header = header .. string.format(" %11s", wl[1]) end
print(header .. string.format(" %8s %10s", "median", "rate Hz"))
-- jit.p and jit.profile must not alternate: a late jit.p callback after a switch can panic
-- LuaJIT 2.1.0-beta3 (jit/p.lua:108). So all ratios first, then all rates.
local ratio_lines = {}
local failed, last_error = 0, nil
for _, ms in ipairs({10, 1}) do
  local line, ratios = string.format("%-12s", "jit.p " .. (1000 / ms)), {}
  for _, wl in ipairs(w.overhead) do
    local plain, profiled = {}, {}
    wl[2]()  -- compile its traces before anything is timed
    for _ = 1, rounds do
      local t0 = os.clock(); wl[2](); plain[#plain + 1] = os.clock() - t0
      t0 = os.clock()
      local ok, err = pcall(function()
        jp.start("fi" .. ms, "/dev/null")
        wl[2]()
        jp.stop()
      end)
      if ok then
        profiled[#profiled + 1] = os.clock() - t0
      else
        -- LuaJIT 2.1.0-beta3's jit.p now and then fails in stop() ("attempt to use a closed
        -- file", jit/p.lua:134): the run is left out and the profiler made sure to be off.
        profile.stop()
        failed = failed + 1
        last_error = tostring(err)
      end
    end
    local ratio = #profiled > 0 and median(profiled) / median(plain) or 0 / 0
    ratios[#ratios + 1] = ratio
    line = line .. string.format(" %11.3f", ratio)
  end
  ratio_lines[ms] = line .. string.format(" %8.3f", median(ratios))
end
for _, ms in ipairs({10, 1}) do
  local worst_rate
  for _, wl in ipairs(w.overhead) do
    local rate = {}
    for _ = 1, rounds do
      local n = 0
      local t0 = os.clock()
      profile.start("fi" .. ms, function(_, samples) n = n + samples end)
      wl[2]()
      profile.stop()
      rate[#rate + 1] = n / (os.clock() - t0)
    end
    local r = median(rate)
    if not worst_rate or math.abs(r - 1000 / ms) > math.abs(worst_rate - 1000 / ms) then worst_rate = r end
  end
  print(ratio_lines[ms] .. string.format(" %10.0f", worst_rate))
end
if failed > 0 then print(string.format("(jit.p failed in %d runs, left out: %s)", failed, last_error)) end
