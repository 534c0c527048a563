-- Round trips keep the time scale: a profile written in any readable format and read back
-- gives the same seconds per function (within 1%) and the same total time; where a format
-- has no place for time the writer puts it where the format allows, and a reader that has
-- to guess says so.
local profiler = require "profiler"
local H = dofile("harness.lua")

local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir)

local function busy(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end
local function heavy() busy(1e7) end
local function light() busy(4e6) end
local function long_c() return #string.rep("x", 2e7) end

-- Self and cumulative seconds per function label in the current profile, and their total.
local function seconds()
  local t, total = {}, 0
  profiler.fold_call_data(function(cd)
    local s = profiler.call_data_stats(cd)
    t[s.proc_name] = {self = s.self_secs_in_proc, cum = s.cum_secs_in_proc}
    total = total + s.self_secs_in_proc
  end, nil)
  return t, total
end

local function label_of(t, prefix)
  for label in pairs(t) do if label:sub(1, #prefix) == prefix then return label end end
end

local function read_file(path)
  local f = io.open(path, "rb")
  local s = f and f:read("*a")
  if f then f:close() end
  return s
end

-- Each readable format: how to write it, the name its reader knows it by.
local formats = {
  {name = "lispworks"}, {name = "folded"}, {name = "sampler"}, {name = "speedscope"},
  {name = "speedscope", options = {evented = true}, label = "speedscope evented"}, {name = "lms"},
}

for _, clock in ipairs({"cpu", "wall"}) do
  for i, f in ipairs(formats) do
    local what = (f.label or f.name) .. " (" .. clock .. ")"
    profiler.statprof(function()
      for _ = 1, 2 do heavy(); light(); long_c() end
    end, {hz = 1000, display = false, clock = clock, full_stacks = true})
    local live, live_total = seconds()
    H.check(profiler.sample_count() > 100, "%s: enough samples: %d", what, profiler.sample_count())
    local path = dir .. "/run" .. i .. "." .. f.name
    profiler.write(path, f.name, f.options)
    local warnings = profiler.read(path)
    H.check(#warnings == 0, "%s: read back without guessing: %s", what, table.concat(warnings, "; "))
    local back, back_total = seconds()
    H.check(math.abs(back_total - live_total) <= 0.01 * live_total,
            "%s: total %.4f s, live %.4f s", what, back_total, live_total)
    for _, prefix in ipairs({"heavy (", "light (", "string.rep [C]", "busy ("}) do
      local l, b = label_of(live, prefix), label_of(back, prefix)
      H.check(l and b, "%s: %s in both (%s, %s)", what, prefix, l, b)
      if l and b then
        H.check(math.abs(back[b].cum - live[l].cum) <= 0.01 * live[l].cum + 1e-9,
                "%s: %s cumulative %.4f s, live %.4f s", what, prefix, back[b].cum, live[l].cum)
      end
    end
  end
end
os.execute("rm -rf " .. dir)
H.done()
