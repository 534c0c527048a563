-- Shared helpers for the Lua test scripts (run by ctest with build/lib on package.cpath).
local H = { failures = 0, checks = 0 }

function H.check(cond, fmt, ...)
  H.checks = H.checks + 1
  if not cond then
    H.failures = H.failures + 1
    io.stderr:write("FAIL: ", string.format(fmt, ...), "\n", debug.traceback("", 2), "\n")
  end
  return cond
end

-- The last run's health in one line, for a failing share's message: whether ticks were lost,
-- merged or moved off the CPU in that run tells a sampling fault from a run that went otherwise.
function H.health_line(profiler)
  local parts = {}
  for k, v in pairs(profiler.health()) do
    if type(v) ~= "table" then parts[#parts + 1] = k .. "=" .. tostring(v) end
  end
  table.sort(parts)
  return table.concat(parts, " ")
end

-- Ends the script: exit status 1 if any check failed.
function H.done()
  print(string.format("%d checks, %d failed", H.checks, H.failures))
  os.exit(H.failures == 0 and 0 or 1)
end

-- Self and cumulative samples of every function of the last run, keyed by label.
function H.counts(profiler)
  return profiler.fold_call_data(function(cd, acc)
    acc[profiler.call_data_name(cd)] = {
      self = profiler.call_data_self_samples(cd),
      cum = profiler.call_data_cum_samples(cd),
      calls = profiler.call_data_calls(cd),
      compiled = profiler.call_data_compiled_samples(cd),
    }
    return acc
  end, {})
end

-- The first label starting with `prefix` ("heavy (" finds "heavy (test.lua:12)").
function H.find(counts, prefix)
  for label, c in pairs(counts) do
    if label:sub(1, #prefix) == prefix then return c, label end
  end
  return nil
end

-- The profile invariants: sum of self = samples, self <= cum <= samples.
function H.check_invariants(profiler, what)
  local n = profiler.sample_count()
  local self_sum = 0
  for label, c in pairs(H.counts(profiler)) do
    self_sum = self_sum + c.self
    H.check(c.self <= c.cum and c.cum <= n, "%s: %s self %d cum %d of %d", what, label, c.self, c.cum, n)
  end
  H.check(self_sum == n, "%s: sum of self %d ~= samples %d", what, self_sum, n)
end

-- No frame of the profiler itself, nor of the code below the profiled function.
function H.check_no_foreign_frames(profiler, what)
  for label in pairs(H.counts(profiler)) do
    H.check(not label:find("profiler", 1, true) and not label:find("statprof", 1, true),
            "%s: profiler frame %s in the profile", what, label)
    H.check(not label:find("main chunk", 1, true), "%s: caller frame %s in the profile", what, label)
  end
end

-- Burns CPU in a loop of `n` iterations (a leaf with no calls).
function H.spin(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end

-- A file's whole text, or nil if it cannot be opened.
function H.read(path)
  local f = io.open(path)
  if not f then return nil end
  local text = f:read("*a")  -- "*a": every Lua reads it
  f:close()
  return text
end

-- Output of a shell command, and its exit status.
function H.run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local _, _, status = p:close()
  return out, status
end

-- The stock interpreter and luaprof, as ctest passes them.
-- A hook set and cleared again and again under a 10 kHz profile sees every event it sees
-- unprofiled, on both clocks, `rounds` runs each (hook_toggle.lua).
function H.check_hook_toggles(profiler, rounds)
  local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  local toggle = dofile(dir .. "/hook_toggle.lua")
  local plain = toggle()
  for _, clock in ipairs{"cpu", "wall"} do
    for round = 1, rounds do
      local got, left = toggle(profiler, {hz = 10000, clock = clock, max_samples = 0})
      H.check(got == plain and left == nil, "a hook set and cleared 200000 times, %s clock, round %d: %d line events against %d",
              clock, round, got, plain)
    end
  end
end

H.lua = os.getenv("LUA54") or "lua5.4"
H.luaprof = os.getenv("LUAPROF")
H.cpath = package.cpath

return H
