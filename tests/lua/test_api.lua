-- Guile statprof's API in Lua spelling, on the last run.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function leaf(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function middle(n) local r = leaf(n); return r end
local function top(rounds) local s = 0 for _ = 1, rounds do s = s + middle(30000) end return s end

-- statprof returns every result, loops, and prints the flat report in Guile 3's layout.
local out_path = os.tmpname()
local a, b, c = profiler.statprof(function() return 1, nil, 3 end, {hz = 1000, display = true, file = out_path})
H.check(a == 1 and b == nil and c == 3, "statprof returns all results")
local runs = 0
profiler.statprof(function() runs = runs + 1; top(10) end, {loop = 3, display = false})
H.check(runs == 3, "loop=3 runs the function three times (%d)", runs)

-- reset/start/stop accumulate until the next reset.
profiler.reset(0, 1000, true, true)  -- 1000 Hz, count calls, full stacks
H.check(not profiler.active(), "inactive after reset")
profiler.start()
H.check(profiler.active(), "active after start")
top(100)
profiler.stop()
local t1, n1 = profiler.accumulated_time(), profiler.sample_count()
profiler.start()
top(100)
profiler.stop()
local t2, n2 = profiler.accumulated_time(), profiler.sample_count()
H.check(t2 > t1 and n2 > n1, "a second start/stop accumulates (%g > %g s, %d > %d samples)", t2, t1, n2, n1)
-- (The rate is test_rate's to check, on runs long enough to measure it; these two last a few
-- milliseconds on a fast machine, where 1000 Hz read 1101.)
H.check_invariants(profiler, "start/stop")

-- Call data: exact calls with count_calls, self and cumulative samples.
local cd = profiler.proc_call_data(leaf)
H.check(cd ~= nil, "proc_call_data finds a sampled function")
H.check(profiler.call_data_name(cd):find("^leaf %(") ~= nil, "name %s", profiler.call_data_name(cd))
H.check(profiler.call_data_calls(cd) == 200, "leaf was called exactly 200 times (%s)", tostring(profiler.call_data_calls(cd)))
H.check(profiler.call_data_calls(profiler.proc_call_data(top)) == 2, "top called twice")
local self, cum = profiler.call_data_self_samples(cd), profiler.call_data_cum_samples(cd)
H.check(self > 0 and self <= cum and cum <= n2, "leaf self %d cum %d of %d", self, cum, n2)
H.check(profiler.proc_call_data(function() end) == nil, "an unseen function has no call data")
H.check(profiler.proc_call_data(print) == nil or profiler.call_data_cum_samples(profiler.proc_call_data(print)) >= 0, "a C function value is accepted")

-- Stats: statprof's derived numbers.
local st = profiler.call_data_stats(cd)
local spp = profiler.accumulated_time() / profiler.sample_count()
H.check(profiler.stats_proc_name(st) == profiler.call_data_name(cd), "stats name")
H.check(math.abs(profiler.stats_pct_time_in_proc(st) - 100 * self / n2) < 1e-9, "pct time")
H.check(math.abs(profiler.stats_self_secs_in_proc(st) - self * spp) < 1e-9, "self secs")
H.check(math.abs(profiler.stats_cum_secs_in_proc(st) - cum * spp) < 1e-9, "cum secs")
H.check(profiler.stats_calls(st) == 200, "stats calls")
H.check(math.abs(profiler.stats_self_secs_per_call(st) - self * spp / 200) < 1e-12, "self secs per call")
H.check(math.abs(profiler.stats_cum_secs_per_call(st) - cum * spp / 200) < 1e-12, "cum secs per call")

-- fold_call_data visits every function once, in report order.
local names, order_ok, prev = {}, true, math.huge
profiler.fold_call_data(function(d, acc)
  names[#names + 1] = profiler.call_data_name(d)
  local s = profiler.call_data_self_samples(d)
  if s > prev then order_ok = false end
  prev = s
  return acc
end, nil)
H.check(#names >= 3 and order_ok, "fold visits %d functions by self samples", #names)
H.check(profiler.fold_call_data(function(d, acc) return acc + profiler.call_data_self_samples(d) end, 0) == n2,
        "fold sums self samples to the sample count")

-- fetch_stacks: leaf first, with weights summing to the sample count.
local stacks, total = profiler.fetch_stacks(), 0
for _, s in ipairs(stacks) do total = total + s.weight end
H.check(total == n2, "stack weights sum to the sample count (%d vs %d)", total, n2)
-- leaf calls nothing: wherever it is on a stack, it is the first frame.
local with_leaf, leaf_first = 0, 0
for _, st in ipairs(stacks) do
  for i, frame in ipairs(st) do
    if frame:find("^leaf") then
      with_leaf = with_leaf + 1
      if i == 1 then leaf_first = leaf_first + 1 end
    end
  end
end
H.check(with_leaf > 0 and leaf_first == with_leaf, "the first frame is the innermost (%d of %d stacks with leaf)",
        leaf_first, with_leaf)

-- fetch_call_tree: counts are path counts; a child's count never exceeds its parent's.
local tree = profiler.fetch_call_tree()
H.check(tree.total == n2, "tree total %s", tostring(tree.total))
local function walk(node, depth)
  local sum = node.self or 0
  for _, child in ipairs(node) do
    H.check(child.count <= (node.count or tree.total), "child %s exceeds parent", child.name)
    sum = sum + child.count
    walk(child, depth + 1)
  end
  if node.count then H.check(sum == node.count, "%s: self + children = count (%d vs %d)", node.name, sum, node.count) end
end
walk(tree, 0)

-- display: to stdout, a file handle, or a path; Guile 3's layout.
local path = os.tmpname()
profiler.display(path)
local text = io.open(path):read("*a")
H.check(text:find("^%%     cumulative   self             \ntime   seconds    seconds   calls   procedure\n") ~= nil,
        "display writes Guile 3's header with calls:\n%s", text)
-- PUC Lua's collector steps inside allocations, where no sample can tell it: after Guile's
-- footer a line says its time is not measured (the seconds in GC are collectgarbage's).
H.check(text:find("\n%-%-%-\nSample count: " .. n2 .. "\nTotal time: [%d.]+ seconds %([%d.]+ seconds in GC%)\n" ..
                  "GC time: not measured on this runtime %(the seconds in GC above are explicit collections%)\n$") ~= nil,
        "display writes the footer:\n%s", text)
local fh = io.open(path, "w")
profiler.display(fh, {labels = "guile"})
fh:close()
H.check(io.open(path):read("*a"):find("test_api.lua:%d+:0:leaf") ~= nil, "guile labels: file:line:0:name")
os.remove(path)
local report = io.open(out_path):read("*a")
H.check(report ~= "" and (report:find("Sample count") or report:find("No samples recorded.\n", 1, true)),
        "statprof{file=} wrote the report: %q", report)
os.remove(out_path)

-- A reset empties the profile; call data from before is refused.
profiler.reset(0, 10000, false)
H.check(profiler.sample_count() == 0 and profiler.accumulated_time() == 0, "reset empties the profile")
local okx, mx = pcall(profiler.call_data_stats, cd)
H.check(not okx and mx:find("another profile", 1, true), "old call data is refused: %s", tostring(mx))
local buf = {}
profiler.display(setmetatable({}, {}) and io.stdout)

-- The layout of Lua's private structs that the sampler reads is recognised (Debian's 5.4.4 is
-- one of 5.4.3-5.4.8), not the public-API-only fallback ("public API only").
profiler.statprof(function() end, {display = false})
-- The layout of the running release's structs was verified (not the public API alone).
local layouts = {["Lua 5.2"] = "^Lua 5%.2$", ["Lua 5.3"] = "^Lua 5%.3$", ["Lua 5.4"] = "^Lua 5%.4%.[0-8]",
                 ["Lua 5.5"] = "^Lua 5%.5%.0$"}
local internals = tostring(profiler.health().internals)
H.check(internals:find(layouts[_VERSION]) ~= nil, "internals: %s", internals)
-- How the ticks reached the thread, by clock.
local timer_cpu = tostring(profiler.health().timer)
profiler.statprof(function() end, {display = false, clock = "wall"})
local timer_wall = tostring(profiler.health().timer)
-- (The kernel's SIGTRAP where perf events are allowed; else the watcher polls, saying why.)
local cpu_ok = timer_cpu == "task clock, the kernel's SIGTRAP" or timer_cpu:find("^polled CPU clock.* %(.+%)$")
H.check(cpu_ok and timer_wall:find("^polled wall clock"), "timer: %s, then %s", timer_cpu, timer_wall)
H.done()
