-- scriptprof's bench: overhead, achieved rate, accuracy and deep stacks on the workloads of
-- workloads.lua, next to a pure-Lua debug.sethook profiler (the baseline people write first).
-- Every measurement interleaves plain and profiled runs, A B A B ..., and compares medians, so a
-- noisy shared machine still gives a fair ratio. Times are process CPU seconds.
-- Usage, from the repository root (samples/bench/bench.sh runs this and the C++ half):
--   lua5.4 -e "package.cpath='build/lib/?.so;'..package.cpath" samples/bench/bench.lua [--quick] [rounds]
-- --quick runs everything once on inputs a fifth the size and exits 1 if a result is not sane.
local profiler = require "profiler"

local quick, rounds = false, nil
for _, a in ipairs(arg or {}) do
  if a == "--quick" then quick = true else rounds = tonumber(a) or error("bad argument: " .. a) end
end
rounds = rounds or (quick and 1 or 7)
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local W = dofile(here .. "/workloads.lua")
local w = W.load(quick and W.quick_scale or 1)

local insane = {}
local function sane(ok, fmt, ...)
  if not ok then insane[#insane + 1] = string.format(fmt, ...) end
end

local median = W.median

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

local sampling = {}
for _, clock in ipairs({"cpu", "wall"}) do
  for _, hz in ipairs({100, 1000, 10000}) do
    sampling[#sampling + 1] = {clock .. " " .. hz, {hz = hz, clock = clock, display = false}, hz}
  end
end
local all = {"all", {hz = 1000, count_calls = true, gc = true, alloc = 65536, display = false}, 1000}
local configs = {}
for _, c in ipairs(sampling) do configs[#configs + 1] = c end
configs[#configs + 1] = {"count_calls", {hz = false, count_calls = true, display = false}}
configs[#configs + 1] = {"gcprof", "gcprof"}
configs[#configs + 1] = {"alloc 64K", {hz = false, alloc = 65536, display = false}}
configs[#configs + 1] = all
configs[#configs + 1] = {"Lua hook", "hook"}

local function run_profiled(fn, opts)
  if opts == "hook" then hook_profile(fn)
  elseif opts == "gcprof" then profiler.gcprof(fn, {display = false})
  else profiler.statprof(fn, opts) end
end

-- Medians of plain and profiled CPU time, and the achieved rate when sampling: all samples over
-- all profiled seconds of the clock asked for.
local function measure(fn, config)
  local plain, profiled, samples, seconds = {}, {}, 0, 0
  fn()  -- first-run costs (heap growth, string interning) are nobody's overhead
  for _ = 1, rounds do
    local t0 = os.clock(); fn(); plain[#plain + 1] = os.clock() - t0
    t0 = os.clock(); run_profiled(fn, config[2]); profiled[#profiled + 1] = os.clock() - t0
    if config[3] then
      samples = samples + profiler.sample_count()
      seconds = seconds + profiler.accumulated_time()
    end
  end
  return median(plain), median(profiled), config[3] and samples / seconds
end

local date = os.date("!%Y-%m-%d")
print(string.format("scriptprof bench %s, %s, %d interleaved round%s, medians of process CPU time",
                    date, _VERSION, rounds, rounds == 1 and "" or "s"))

-- ---- Overhead and rate ------------------------------------------------------------------
print("\n== overhead (profiled / plain) and achieved rate (samples per second of the clock)")
local header = string.format("%-12s", "config")
for _, wl in ipairs(w.overhead) do header = header .. string.format(" %11s", wl[1]) end
print(header .. string.format(" %8s %10s", "median", "rate Hz"))
local ratio_of = {}  -- ratio_of[config][workload]
local worst_rate = {}
for _, c in ipairs(configs) do
  local line, ratios, rates = string.format("%-12s", c[1]), {}, {}
  ratio_of[c[1]] = {}
  for _, wl in ipairs(w.overhead) do
    local a, b, r = measure(wl[2], c)
    local ratio = b / a
    ratio_of[c[1]][wl[1]] = ratio
    ratios[#ratios + 1] = ratio
    if r then rates[#rates + 1] = r end
    line = line .. string.format(" %11.3f", ratio)
    sane(ratio == ratio and ratio > 0.2 and ratio < 50, "%s on %s: ratio %s", c[1], wl[1], ratio)
    -- Sane means within half the rate asked, once a run is long enough to hold 50 samples.
    if r and a * c[3] >= 50 then
      sane(math.abs(r / c[3] - 1) < 0.5, "%s on %s: rate %.0f Hz", c[1], wl[1], r)
    end
  end
  local rate_text = "-"
  if #rates > 0 then
    local worst = rates[1]
    for _, r in ipairs(rates) do if math.abs(r - c[3]) > math.abs(worst - c[3]) then worst = r end end
    worst_rate[c[1]] = worst
    rate_text = string.format("%.0f", worst)
  end
  print(line .. string.format(" %8.3f %10s", median(ratios), rate_text))
end
print("(rate: the workload whose rate is furthest from the rate asked)")

-- ---- Accuracy ---------------------------------------------------------------------------
-- Truth: each part timed alone, unprofiled. Measured: the parts' cumulative samples summed over
-- the rounds, as shares of the parts' total.
print("\n== accuracy: share of samples vs share of CPU time measured unprofiled, in percentage points")
-- The parts are timed in turn, round after round, over twice the rounds of the rest, and each
-- part's truth is its fastest run: the work is fixed, so load on the machine only ever adds
-- time (a median still moved a true split by 4 points when a neighbour got busy).
local truth = {}
for i, a in ipairs(w.accuracy) do
  local times = {}
  for j = 1, #a[3] do times[j] = {} end
  for _ = 1, 2 * rounds do
    for j, part in ipairs(a[3]) do
      local t0 = os.clock()
      for _ = 1, part[2] do part[1]() end
      local list = times[j]
      list[#list + 1] = os.clock() - t0
    end
  end
  local t, sum = {}, 0
  for j = 1, #times do t[j] = math.min(table.unpack(times[j])); sum = sum + t[j] end
  for j = 1, #t do t[j] = t[j] / sum end
  truth[i] = t
end
header = string.format("%-12s", "config")
for _, a in ipairs(w.accuracy) do header = header .. string.format(" %11s", a[1]) end
print(header .. string.format(" %8s", "worst"))
local worst_error = {}
local worst_sd = {}  -- the binomial standard deviation of the worst row's share
local missing_names = {}
local accuracy_configs = {}
for _, c in ipairs(sampling) do accuracy_configs[#accuracy_configs + 1] = c end
accuracy_configs[#accuracy_configs + 1] = all
for _, c in ipairs(accuracy_configs) do
  local line, worst = string.format("%-12s", c[1]), 0
  for i, a in ipairs(w.accuracy) do
    local samples = {}
    for j = 1, #a[3] do samples[j] = 0 end
    local runs = {}  -- each run's health, for a result that is not sane
    for _ = 1, rounds do
      profiler.statprof(a[2], c[2])
      for j, part in ipairs(a[3]) do
        local cd = profiler.proc_call_data(part[1])
        samples[j] = samples[j] + (cd and profiler.call_data_cum_samples(cd) or 0)
      end
      local h = profiler.health()
      runs[#runs + 1] = string.format("%s; %s signals, %s merged, %s dropped, %s excluded", tostring(h.timer),
                                      tostring(h.signals), tostring(h.ticks_merged), tostring(h.dropped),
                                      tostring(h.excluded))
      -- The names the profile must show, each with samples of its own (at 1000 Hz and up:
      -- a C function's few percent can get no sample at 100 Hz in a short run).
      for _, prefix in ipairs(c[3] >= 1000 and a[4] or {}) do
        local found = profiler.fold_call_data(function(cd, acc)
          local name = profiler.call_data_name(cd)
          if name:sub(1, #prefix) == prefix and profiler.call_data_self_samples(cd) > 0 then return true end
          return acc
        end, false)
        if not found then missing_names[#missing_names + 1] = c[1] .. " " .. a[1] .. ": " .. prefix end
      end
    end
    local total = 0
    for _, s in ipairs(samples) do total = total + s end
    local err, sd = 0, 0
    for j = 1, #samples do
      local share = total > 0 and samples[j] / total or 0
      local e = math.abs(share - truth[i][j]) * 100
      if e >= err then
        err = e
        -- What the sample count alone explains: a binomial standard deviation, in points.
        sd = total > 0 and 100 * math.sqrt(truth[i][j] * (1 - truth[i][j]) / total) or 0
      end
    end
    if err >= worst then worst_sd[c[1]] = sd end
    worst = math.max(worst, err)
    line = line .. string.format(" %11.2f", err)
    if c[3] >= 1000 then
      sane(total > 0 and err < 30, "%s on %s: %d samples, error %.1f pp (parts %s; %s)", c[1], a[1], total, err,
           table.concat(samples, "/"), table.concat(runs, " | "))
    end
  end
  worst_error[c[1]] = worst
  print(line .. string.format(" %8.2f", worst))
end
local shares = {}
for i, a in ipairs(w.accuracy) do
  local s = {}
  for j = 1, #truth[i] do s[j] = string.format("%.1f%%", truth[i][j] * 100) end
  shares[#shares + 1] = a[1] .. " " .. table.concat(s, "/")
end
print("(true splits: " .. table.concat(shares, ", ") .. ")")
print("names and short C functions charged (1000 Hz and up): " ..
      (#missing_names == 0 and "all shown" or "MISSING " .. table.concat(missing_names, "; ")))

-- ---- Deep stacks ------------------------------------------------------------------------
print("\n== a recursion 100000 frames deep, sampled at 10 kHz")
local deep_ratio = {}
for _, clock in ipairs({"cpu", "wall"}) do
  local c = {clock .. " 10000", {hz = 10000, clock = clock, display = false}, 10000}
  local a, b, r = measure(w.deep, c)
  deep_ratio[clock] = b / a
  print(string.format("%-12s plain %.3f s, profiled %.3f s, ratio %.3f, rate %.0f Hz", c[1], a, b, b / a, r))
  sane(b / a < 50 and r > 0, "deep on %s: ratio %.1f, rate %.0f", clock, b / a, r)
end

-- ---- LuaJIT's profiler on the same workloads --------------------------------------------
print("\n== peer: LuaJIT's built-in profiler (jit.profile doing jit.p's work per sample, as luajit -jp) on the same workloads")
local probe = io.popen("command -v luajit 2>/dev/null")
local luajit = probe and probe:read("l")
if probe then probe:close() end
if luajit and luajit ~= "" then
  local cmd = string.format("%s %s/luajit_peer.lua %s%d", luajit, here, quick and "--quick " or "", rounds)
  local pipe = io.popen(cmd)
  for l in pipe:lines() do print(l) end
  local ok = pipe:close()
  sane(ok, "luajit peer run failed: %s", cmd)
else
  print("luajit is not installed (apt-get install luajit); skipped")
end

-- ---- Targets ----------------------------------------------------------------------------
local function worst_of(config)
  local worst = 0
  for _, r in pairs(ratio_of[config]) do worst = math.max(worst, r) end
  return worst
end
local function median_of(config)
  local xs = {}
  for _, r in pairs(ratio_of[config]) do xs[#xs + 1] = r end
  return median(xs)
end
local function verdict(ok) return ok and "met" or "MISSED" end
print("\n== targets (issue 6)" .. (quick and ": --quick runs once on small inputs, run the full bench to judge" or ""))
for _, t in ipairs({{100, 1.01}, {1000, 1.03}, {10000, 1.30}}) do
  for _, clock in ipairs({"cpu", "wall"}) do
    local name = clock .. " " .. t[1]
    print(string.format("overhead %-10s <= %.2f: median of workloads %.3f, worst %.3f  %s", name, t[2],
                        median_of(name), worst_of(name), verdict(median_of(name) <= t[2])))
  end
end
for _, c in ipairs(sampling) do
  local off = math.abs(worst_rate[c[1]] / c[3] - 1) * 100
  print(string.format("rate %-10s within 5%%: worst %.0f Hz (%.1f%% off)  %s", c[1], worst_rate[c[1]], off,
                      verdict(off <= 5)))
end
print(string.format("call counting on recursion <= 2.0x: %.2fx  %s", ratio_of.count_calls.recursion,
                    verdict(ratio_of.count_calls.recursion <= 2.0)))
for _, clock in ipairs({"cpu", "wall"}) do
  local e = worst_error[clock .. " 1000"]
  print(string.format("accuracy %s 1000 <= 2 pp: worst %.2f pp (sample count alone: sd %.2f pp)  %s", clock, e,
                      worst_sd[clock .. " 1000"] or 0, verdict(e <= 2)))
end
print(string.format("names and short C functions shown: %d missing  %s", #missing_names, verdict(#missing_names == 0)))
for _, clock in ipairs({"cpu", "wall"}) do
  print(string.format("deep 100k at 10 kHz (%s) <= 2x: %.2fx  %s", clock, deep_ratio[clock],
                      verdict(deep_ratio[clock] <= 2)))
end

if #insane > 0 then
  print("\nnot sane:")
  for _, m in ipairs(insane) do print("  " .. m) end
  os.exit(1)
end
