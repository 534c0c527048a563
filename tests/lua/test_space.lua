-- Space profiling: allocation sampling (Allegro's space profiler) and gcprof (statprof's).
local profiler = require "profiler"
local H = dofile("harness.lua")

-- Equal CPU, very different allocation: `allocating` builds tables and strings, `computing`
-- only does arithmetic. Each is calibrated to the same CPU time below.
local sink
local function allocating(n)
  for i = 1, n do sink = {i, tostring(i), {}} end
end
local function computing(n)
  local x = 0
  for i = 1, n do x = x + (i * 7) % 13 end
  return x
end
-- Calibrated on the profiler's own clock, under the options of the run below: the allocator
-- wrapper makes each allocation dearer (allocating takes ~35% more CPU under any run, ~2.8x
-- with a sample every 4 KiB), and that is the program time the time profile splits. Measured
-- with os.clock, without the profiler, computing drew only 22-32% of the samples.
local function time_of(f, n)
  profiler.start_profiler{hz = 1000, alloc = 4096}
  f(n)
  profiler.stop_profiler()
  return profiler.accumulated_time()
end
local na, nc = 200000, 200000
nc = math.floor(nc * time_of(allocating, na) / time_of(computing, nc))
local function both() for _ = 1, 3 do allocating(na); computing(nc) end end

-- Space and time together: the time profile splits about evenly, the space profile is
-- dominated by the allocating function.
profiler.start_profiler{hz = 1000, alloc = 4096}
both()
profiler.stop_profiler()
H.check(profiler.status() == "saved", "status after a run: %s", profiler.status())
local space = profiler.save_current_profile("space")
local time = profiler.save_current_profile("time")
H.check(profiler.status() == "analyzed", "status after saving: %s", profiler.status())
-- Each function's share with what it calls (a C function it calls, such as tostring, is
-- charged what it allocates itself).
local function shares(p)
  local tree = p:fetch_call_tree()
  local t = {}
  local function walk(node, owner)
    for _, child in ipairs(node) do
      local name = child.name:match("^([%w_]+)") or child.name
      local o = (name == "allocating" or name == "computing") and name or owner
      if o then t[o] = (t[o] or 0) + child.self end
      walk(child, o)
    end
  end
  walk(tree)
  local a, c = (t.allocating or 0) / tree.total, (t.computing or 0) / tree.total
  return a, c, tree.total
end
local sa, sc, bytes = shares(space)
H.check(sa > 0.9 and sc < 0.05, "space: allocating %.3f, computing %.3f of %d bytes", sa, sc, bytes)
local ta, tc = shares(time)
H.check(ta > 0.25 and tc > 0.25, "time: allocating %.3f, computing %.3f (equal CPU)", ta, tc)
-- The bytes sampled are about what Lua says was allocated (each sample weighs what it stands for).
collectgarbage("collect")
local before = collectgarbage("count")
collectgarbage("stop")
profiler.start_profiler{hz = false, alloc = 1024}
allocating(50000)
profiler.stop_profiler()
local grown = (collectgarbage("count") - before) * 1024
collectgarbage("restart")
local sampled = profiler.save_current_profile():fetch_call_tree().total
H.check(sampled > 0.8 * grown and sampled < 1.2 * grown, "sampled %d bytes of %d allocated", sampled, grown)

-- Reports say what their numbers mean.
local path = os.tmpname()
profiler.report(space, "allegro", path)
local text = io.open(path):read("*a")
H.check(text:find("Kbytes of space allocated", 1, true) and text:find("Kbyte", 1, true), "allegro space report:\n%s", text)
space:display(path)
text = io.open(path):read("*a")
H.check(text:find("space    Kbytes     Kbytes", 1, true) and text:find("Total allocated:", 1, true), "flat space report:\n%s", text)
time:display(path)
text = io.open(path):read("*a")
H.check(text:find("seconds", 1, true) and not text:find("Kbytes", 1, true), "time report stays in seconds")
local ok, e = pcall(space.report, space, "gprof")
H.check(not ok and e:find("space profile", 1, true), "gprof refuses a space profile: %s", e)

-- The wrapper changes nothing the program sees: results, errors, and an allocation failure
-- (a string too large to make) stays the same failure.
profiler.start_profiler{alloc = 64}
local ok1, e1 = pcall(string.rep, "x", math.floor((math.maxinteger or 2^62) / 2))
local t = {}
for i = 1, 1000 do t[i] = ("%d"):format(i) end
profiler.stop_profiler()
local ok2, e2 = pcall(string.rep, "x", math.floor((math.maxinteger or 2^62) / 2))
H.check(ok1 == ok2 and e1 == e2, "same failure with and without the wrapper: %s / %s", e1, e2)
H.check(#t == 1000 and t[1000] == "1000", "results unchanged")

-- gcprof: one sample per GC cycle, in the function that allocated; the flat display.
local gc_out = os.tmpname()
local function churn() for i = 1, 3e5 do sink = {i} end end
local function idle() return computing(3e5) end
profiler.gcprof(function() churn(); idle() end, {loop = 2, file = gc_out})
local gc_text = io.open(gc_out):read("*a")
local counts = H.counts(profiler)
local c = H.find(counts, "churn")
H.check(c and c.self > 0, "gcprof samples churn:\n%s", gc_text)
local i = H.find(counts, "idle") or {self = 0}
local n = profiler.sample_count()
H.check(n >= 5 and c.self >= 0.8 * n and i.self <= 0.2 * n, "gcprof: %d samples, churn %d, idle %d", n, c and c.self or 0, i.self)
H.check(gc_text:find("Sample count: " .. n, 1, true), "gcprof prints the flat display:\n%s", gc_text)
H.check_invariants(profiler, "gcprof")
H.check_no_foreign_frames(profiler, "gcprof")
-- After the run the sentinel lets go: no more samples.
collectgarbage("collect")
collectgarbage("collect")
H.check(profiler.sample_count() == n, "no GC samples after the run")

os.remove(path)
os.remove(gc_out)
H.done()
