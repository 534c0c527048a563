-- The bench's workloads, shared by bench.lua (Lua 5.4 + scriptprof) and luajit_peer.lua
-- (LuaJIT's own profiler), so both measure the same programs. Lua 5.1 syntax only.
-- load(scale) returns { overhead = {{name, fn}, ...}, accuracy = {{name, run, parts [, names]}, ...},
-- deep = fn }, where parts lists {function, calls per run} of the functions whose split is known
-- and names the label prefixes the profile must show (a C function charged, a method's class);
-- scale 1 gives overhead runs of about 0.15 s and accuracy runs of about 0.5 s here.
local W = {}
W.quick_scale = 0.2  -- --quick: every workload a fifth the size

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

-- A leaf that burns CPU in `n` iterations and calls nothing.
local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end

-- Lua's own C functions with no Lua callbacks: one call that runs for a long time.
local function long_c_calls(n)
  local t = {}
  local seed = 12345
  for i = 1, n do seed = (seed * 1103515245 + 12345) % 2147483648; t[i] = seed end
  table.sort(t)
  local s = string.rep("abc def ghi ", n)
  local count = select(2, string.gsub(s, "%a+", "%0"))
  return t[1] + count
end

local function strings_and_tables(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = string.format("%d:%s", i, tostring(i % 97)) end
  local index = {}
  for i = 1, #parts do index[parts[i]] = i end
  local s = table.concat(parts, ",")
  return #s + #parts
end

local function producer_consumer(n)
  local producer = coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * 2) end
    return nil
  end)
  local sum = 0
  while true do
    local v = producer()
    if not v then break end
    sum = sum + v % 13
  end
  return sum
end

local function allocation(n)
  local keep = {}
  for i = 1, n do
    local p = {x = i, y = i + 1, tag = "p"}
    keep[i % 64 + 1] = function() return p.x + p.y end
  end
  return #keep
end

local function descend(depth, work)
  if depth == 0 then return spin(work) end
  local r = descend(depth - 1, work)
  return r
end

-- A 2D vector class: the method-heavy workload, whose methods must come out as "Vec.new",
-- "Vec:add", "Vec:dot" (the names their text declares; Vec is local here). Vec:dot is a short
-- leaf with no call and no loop; Vec:add does not end in a tail call, which would take its
-- frame off the stack.
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
function Vec:add(o) local v = Vec.new(self.x + o.x, self.y + o.y) return v end
function Vec:dot(o) return self.x * o.x + self.y * o.y end

-- A game's frame: move entities, test pairs in a grid cell, collect events.
local function frame_loop(frames, count)
  local entities = {}
  for i = 1, count do entities[i] = {x = i % 50, y = i % 37, vx = 1, vy = -1} end
  local events = 0
  for f = 1, frames do
    for i = 1, count do
      local e = entities[i]
      e.x = e.x + e.vx * 0.016
      e.y = e.y + e.vy * 0.016 + math.sin(f * 0.1) * 0.01
      if e.x > 50 or e.x < 0 then e.vx = -e.vx end
      if e.y > 37 or e.y < 0 then e.vy = -e.vy end
    end
    local cells = {}
    for i = 1, count do
      local e = entities[i]
      local key = math.floor(e.x / 5) * 64 + math.floor(e.y / 5)
      local cell = cells[key]
      if cell then events = events + #cell; cell[#cell + 1] = e else cells[key] = {e} end
    end
  end
  return events
end

function W.load(scale)
  local function n(x) return math.max(1, math.floor(x * scale)) end
  local fib_n = scale >= 1 and 32 or 28
  local w = {}
  w.overhead = {
    {"recursion", function() return fib(fib_n) end},
    {"strings", function() return strings_and_tables(n(100000)) end},
    {"long C", function() return long_c_calls(n(200000)) end},
    {"coroutines", function() return producer_consumer(n(1200000)) end},
    {"allocation", function() return allocation(n(450000)) end},
    {"deep 10k", function() local s = 0 for _ = 1, n(300) do s = s + descend(10000, 20000) end return s end},
    {"frame loop", function() return frame_loop(n(400), 1000) end},
  }

  -- Workloads whose true split is known: each part is a function of its own, timed alone
  -- unprofiled to give the truth, then run together under the profiler. No part ends in a
  -- tail call, which would take it off the stack.
  local function lua_small() local r = spin(n(16000000)); return r end
  local function lua_big() local r = spin(n(48000000)); return r end
  local function c_part() local r = long_c_calls(n(300000)); return r end
  local function lua_part() local r = spin(n(25000000)); return r end
  local function produced() local r = spin(n(100000)); return r end
  local function consumed() local r = spin(n(200000)); return r end
  local function at_depth() local r = descend(5000, n(32000000)); return r end
  local function shallow() local r = spin(n(32000000)); return r end
  -- Short C calls inside Lua loops: each call is far shorter than a sampling period.
  local function formatting()
    local r = 0
    for i = 1, n(900000) do r = r + #string.format("%d:%5.2f", i, i * 0.5) end
    return r
  end
  local function trigonometry()
    local r = 0
    for i = 1, n(4000000) do r = r + math.sin(i) * math.cos(i) end
    return r
  end
  local unit = Vec.new(1, 1)
  local function vec_adds() local v = Vec.new(0, 0) for _ = 1, n(2500000) do v = v:add(unit) end return v.x end
  local function vec_dots() local r = 0 for i = 1, n(5000000) do r = r + unit:dot(unit) + i end return r end
  local function coroutine_run()
    local co = coroutine.wrap(function() for _ = 1, 200 do produced(); coroutine.yield(true) end end)
    for _ = 1, 200 do co(); consumed() end
  end
  w.accuracy = {
    {"Lua 1:3", function() lua_small(); lua_big() end, {{lua_small, 1}, {lua_big, 1}}},
    {"long C", function() c_part(); lua_part() end, {{c_part, 1}, {lua_part, 1}}},
    {"coroutine", coroutine_run, {{produced, 200}, {consumed, 200}}},
    {"deep 5000", function() at_depth(); shallow() end, {{at_depth, 1}, {shallow, 1}}},
    {"short C", function() formatting(); trigonometry(); lua_small() end,
     {{formatting, 1}, {trigonometry, 1}, {lua_small, 1}}, {"string.format [C]", "math.sin [C]", "math.cos [C]"}},
    {"methods", function() vec_adds(); vec_dots() end, {{vec_adds, 1}, {vec_dots, 1}},
     {"Vec.new (", "Vec:add (", "Vec:dot ("}},
  }
  -- 100k frames: arming a hook costs time in proportion to the depth.
  w.deep = function() return descend(100000, n(15000000)) end
  return w
end

-- The middle of xs (the upper middle for an even count), leaving xs as it was.
function W.median(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  return s[math.floor((#s + 1) / 2)]
end

return W
