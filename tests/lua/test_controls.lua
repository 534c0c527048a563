-- Allegro's controls: count lists, suspend/resume and status, max_samples, hidden functions and
-- packages, closures kept apart, excluded processes, saved profiles, per-line attribution.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function other(n) local x = 0 for i = 1, n do x = x + i end return x end

-- count_list: exact counts of the listed functions only; the others are "not counted" (nil),
-- never a made-up 0.
profiler.statprof(function() fib(20); for _ = 1, 7 do other(1e6) end end,
                  {hz = 1000, count_list = {fib}, display = false})
local counts = H.counts(profiler)
local f = H.find(counts, "fib")
H.check(f and f.calls == 21891, "count_list: fib(20) = 21891 calls (%s)", f and f.calls)
local o = H.find(counts, "other")
H.check(o and o.calls == nil, "count_list: other is sampled and not counted (%s)", o and tostring(o.calls))
local path = os.tmpname()
profiler.report("call-counts", path)
local listing = io.open(path):read("*a")
H.check(listing:match("^21891 #<Function fib %(.-:6%)>\n"), "show-call-counts listing:\n%s", listing)
-- A listed function that runs but is not called during the run was counted: 0 calls.
local function listed_runner()
  profiler.start_profiler{hz = 1000, count_list = {listed_runner, fib}}
  other(5e6)
  profiler.stop_profiler()
end
listed_runner()
counts = H.counts(profiler)
local r = H.find(counts, "listed_runner")
H.check(r and r.calls == 0, "count_list: a listed function running since before the run has 0 calls (%s)",
        r and tostring(r.calls))
o = H.find(counts, "other")
H.check(o and o.calls == nil, "count_list: unlisted other not counted (%s)", o and tostring(o.calls))
local ok, e = pcall(profiler.statprof, fib, {count_list = {fib, "fib"}})
H.check(not ok and e:find("option 'count_list' must be a list of functions, item 2 is a string", 1, true), "%s", e)

-- start_profiler / start_sampling / stop_sampling / with_sampling and status.
H.check(profiler.status() == "saved" or profiler.status() == "analyzed", "status %s", profiler.status())
profiler.start_profiler{hz = 1000, start_sampling = false}
H.check(profiler.status() == "suspended", "started suspended: %s", profiler.status())
other(3e6)  -- not sampled
local skipped = profiler.sample_count()
profiler.with_sampling(function() fib(24) end)
H.check(profiler.status() == "suspended", "suspended again after with_sampling: %s", profiler.status())
other(3e6)
profiler.start_sampling()
H.check(profiler.status() == "sampling", "sampling: %s", profiler.status())
fib(22)
profiler.stop_sampling()
profiler.stop_profiler()
H.check(profiler.status() == "saved", "saved: %s", profiler.status())
counts = H.counts(profiler)
H.check(skipped == 0, "nothing sampled while suspended (%d)", skipped)
H.check(H.find(counts, "fib") and not H.find(counts, "other"), "only the sampled code is in the profile")
H.check(profiler.accumulated_time() < 0.9 * (profiler.sample_count() / 1000) + 0.5, "suspended time is not profiled time")
profiler.display(path)
H.check(profiler.status() == "analyzed", "analyzed after display: %s", profiler.status())
-- An error inside with_sampling still suspends.
profiler.start_profiler{hz = 1000, start_sampling = false}
ok, e = pcall(profiler.with_sampling, function() error("boom") end)
H.check(not ok and e:find("boom") and profiler.status() == "suspended", "error in with_sampling: %s, %s", e, profiler.status())
profiler.stop_profiler()

-- max_samples: collection stops at the bound, cleanly, and says so.
profiler.statprof(function() other(3e7) end, {hz = 10000, max_samples = 50, full_stacks = true, display = false})
local h = profiler.health()
H.check(h.samples_taken == 50 and h.max_samples_reached, "max_samples: %d samples, reached %s", h.samples_taken, tostring(h.max_samples_reached))
H.check(#profiler.fetch_stacks() == 50, "50 stacks kept (%d)", #profiler.fetch_stacks())
local report = os.tmpname()
profiler.display(report)
local first = H.read(report):match("^[^\n]*")
os.remove(report)
H.check(first == "Collection stopped at max_samples after 50 samples: later time is not in this profile.",
        "the report opens with the limit: %s", first)
-- And standard error says so once, when it happens (Lua's own warnings are off by default).
local script = os.tmpname()
local fh = assert(io.open(script, "w"))
fh:write(string.format("package.cpath = %q\n", package.cpath), [[
  local profiler = require "profiler"
  local function spin() local x = 0 for i = 1, 3e7 do x = x + i % 7 end return x end
  profiler.statprof(spin, {hz = 10000, max_samples = 20, display = false})
  io.stdout:write("done\n")
]])
fh:close()
local out = H.run(H.lua .. " " .. script)
os.remove(script)
local _, warnings = out:gsub("profiler: max_samples %(20%) reached", "")
H.check(warnings == 1 and out:find("done", 1, true), "one warning on standard error:\n%s", out)
ok, e = pcall(profiler.statprof, fib, {max_samples = -1})
H.check(not ok and e:find("max_samples", 1, true), "%s", e)

-- Hidden functions and packages move their samples to the caller, shown with "...".
local function helper(n) local r = other(n) return r end  -- no tail calls: helper stays on the stack
local function caller() for _ = 1, 40 do helper(1e6) end end
profiler.statprof(function() caller() end, {hz = 1000, display = false})
profiler.report("allegro", path, {hidden = {"helper", "other"}})
local text = io.open(path):read("*a")
-- caller holds every sample but a tick that landed in the wrapper around it (the run is about
-- 0.1 s on a fast machine, so one such tick is 1%: "100.0" was too strict).
local share = tonumber(text:match("\n%s*([%d.]+)%s+[%d.]+%s+[%d.]+%s+[%d.]+%s+%.%.%. caller"))
H.check(share and share >= 97 and not text:find("helper", 1, true),
        "hidden functions fold into caller:\n%s", text)
profiler.display_defaults{hidden_packages = {"test_controls"}, significance_threshold = 0.02}
profiler.report("allegro", path)
text = io.open(path):read("*a")
H.check(text:find("Times below 2.0%", 1, true) and not text:find("caller", 1, true), "display defaults apply:\n%s", text)
profiler.reset_display_defaults()
profiler.report("allegro", path)
text = io.open(path):read("*a")
H.check(text:find("Times below 1.0%", 1, true) and text:find("other", 1, true), "reset display defaults:\n%s", text)

-- interpret_closures: closures of one prototype apart, named, and reachable by number.
local function make(n) return function() local r = other(n) return r end end
local small, big = make(1e6), make(4e6)
local function both() for _ = 1, 5 do small(); big() end end
profiler.statprof(both, {hz = 1000, display = false})
local merged = 0
for label in pairs(H.counts(profiler)) do if label:find("make", 1, true) or label:find("^%?") then merged = merged + 1 end end
profiler.statprof(both, {hz = 1000, display = false, interpret_closures = true})
counts = H.counts(profiler)
local closures = {}
for label, c in pairs(counts) do
  local n = label:match("%[closure (%d+)%]")
  if n then closures[tonumber(n)] = c end
end
local c1, c2 = closures[1], closures[2]
H.check(c1 and c2 and not closures[3], "two closures numbered; functions made once are not")
if c1 and c2 then
  local by_fn = {}
  for n = 1, 2 do by_fn[profiler.closure(n)] = closures[n] end
  H.check(by_fn[big] and by_fn[small] and by_fn[big].cum > 2 * by_fn[small].cum,
          "closure(n) gives each closure back; the big one dominates (%s vs %s)",
          by_fn[big] and by_fn[big].cum, by_fn[small] and by_fn[small].cum)
  local pd = profiler.proc_call_data(big)
  H.check(pd and profiler.call_data_name(pd):find("closure", 1, true), "proc_call_data finds a closure")
end

-- except_processes / profile_process_p: an excluded coroutine's time is not collected.
local co = coroutine.create(function() while true do other(5e5); coroutine.yield() end end)
H.check(profiler.profile_process_p(co) == true, "profiled by default")
profiler.statprof(function()
  for _ = 1, 20 do coroutine.resume(co); fib(22) end  -- ~25 ms of fib: never unsampled
end, {hz = 1000, except_processes = {co}, display = false})
counts = H.counts(profiler)
h = profiler.health()
local o, f = H.find(counts, "other"), H.find(counts, "fib")
H.check(not o and f and h.excluded > 0,
        "excluded coroutine not sampled (%d ticks excluded; other %s, fib %s)",
        h.excluded, o and o.cum, f and f.cum)
H.check(profiler.profile_process_p(co) == false, "flag reads back")
profiler.profile_process_p(co, true)
profiler.statprof(function() for _ = 1, 20 do coroutine.resume(co) end end, {hz = 1000, display = false})
H.check(H.find(H.counts(profiler), "other"), "profiled again once the flag is set back")

-- save_current_profile: two runs compared side by side.
-- fib(27): some 20 ms of work at 1 kHz, so that no phase of the ticks leaves it unsampled.
profiler.statprof(function() fib(27) end, {hz = 1000, display = false})
local first = profiler.save_current_profile()
profiler.statprof(function() other(3e6) end, {hz = 1000, display = false})
local second = profiler.save_current_profile()
first:report("flat", path)
local t1 = io.open(path):read("*a")
profiler.report(second, "flat", path)
local t2 = io.open(path):read("*a")
H.check(t1:find("fib", 1, true) and not t1:find("other", 1, true), "first profile kept:\n%s", t1)
H.check(t2:find("other", 1, true) and not t2:find("fib", 1, true), "second profile:\n%s", t2)
first:write(path, "folded")
H.check(io.open(path):read("*a"):find("fib", 1, true), "writers take a saved profile")
H.check(tostring(first):find("^profile %(time"), "%s", tostring(first))
profiler.start()
ok, e = pcall(profiler.save_current_profile)
profiler.stop()
H.check(not ok and e:find("stop the profiler", 1, true), "%s", e)

-- annotate: per-line shares of one function.
local function lines(n)
  local a = 0
  for i = 1, n do a = a + i end          -- cheap line
  for i = 1, n * 8 do a = a + i % 3 end  -- expensive line
  return a
end
profiler.statprof(function() lines(1e6) end, {hz = 1000, display = false})
profiler.annotate(lines, path)
text = io.open(path):read("*a")
-- A line no tick landed on is listed with its source and no figures: its share is 0 (the cheap
-- loop takes a few milliseconds, so at 1 kHz it may get no tick at all).
local function share(pattern)
  local figure = text:match("\n%s*([%d.]+)%s+[%d.]+%s+%d+%s+" .. pattern)
  if figure then return tonumber(figure) end
  if text:match("\n%s+%d+%s+" .. pattern) then return 0 end
end
local cheap, dear = share("for i = 1, n do"), share("for i = 1, n %* 8 do")
H.check(cheap and dear and dear > 4 * cheap, "annotate: expensive line %s%% vs cheap %s%%\n%s", dear, cheap, text)
profiler.annotate(print, path)
H.check(io.open(path):read("*a"):find("not sampled", 1, true), "annotate of an unsampled function")

os.remove(path)
H.done()
