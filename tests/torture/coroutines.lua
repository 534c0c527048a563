-- Coroutines: wrap, close, isyieldable, running, status, errors inside wrapped coroutines,
-- yields across pcall, metamethods and iterators, and the C-call boundary.
local log
local function say(...) local t = table.pack(...) for i = 1, t.n do t[i] = tostring(t[i]) end log[#log + 1] = table.concat(t, " ", 1, t.n) end
local main = coroutine.running()

local function round()
  log = {}
  local m, ismain = coroutine.running()
  say("running in main", m == main, ismain, coroutine.isyieldable())
  local co
  co = coroutine.create(function(a, b)
    local r, im = coroutine.running()
    say("inside", r == co, im, coroutine.isyieldable(), coroutine.status(co))
    local c = coroutine.yield(a + b)
    -- A yield across pcall, and an error caught inside after resuming.
    local ok, v = pcall(function() local x = coroutine.yield("in pcall") error("after " .. x, 0) end)
    say("pcall in coroutine", ok, v)
    local ok2, v2 = xpcall(function() return coroutine.yield("in xpcall") end, debug.traceback)
    say("xpcall in coroutine", ok2, v2)
    return c * 2, "done"
  end)
  say(coroutine.resume(co, 1, 2))
  say(coroutine.resume(co, 21))
  say(coroutine.resume(co, "resumed"))
  say(coroutine.resume(co, "xp"))
  say(coroutine.status(co), coroutine.resume(co))
  -- Status "normal" of a coroutine that resumed another.
  local outer
  outer = coroutine.create(function() local inner = coroutine.create(function() return coroutine.status(outer) end) return coroutine.resume(inner) end)
  say(coroutine.resume(outer))
  -- Errors inside wrapped coroutines: position prefix, non-string values, dead wrappers.
  local w = coroutine.wrap(function() local x = nil; return x.field end)
  say(pcall(w))
  say(pcall(w))
  local obj = {}
  local w2 = coroutine.wrap(function() error(obj) end)
  local ok, e = pcall(w2)
  say("wrapped object", ok, e == obj)
  local w3 = coroutine.wrap(function(...) local n = select("#", ...) while true do n = coroutine.yield(n) end end)
  say(w3(1, 2, 3), w3(9), w3())
  -- close: suspended, dead with an error, the running coroutine.
  local c1 = coroutine.create(function() coroutine.yield() end)
  coroutine.resume(c1)
  say("close suspended", coroutine.close(c1), coroutine.status(c1))
  local c2 = coroutine.create(function() error("dead", 0) end)
  coroutine.resume(c2)
  say("close errored", coroutine.close(c2))
  say("close running", pcall(coroutine.close, coroutine.running()))
  local c3 = coroutine.create(function() return pcall(coroutine.close, c3) end)
  -- Yields inside metamethods and iterators.
  local gen = coroutine.wrap(function()
    local t = setmetatable({}, {__index = function(_, k) return coroutine.yield(k) end,
                                __lt = function() return coroutine.yield("lt") end,
                                __concat = function() return coroutine.yield("concat") end})
    local v = t.key
    local lt = t < t
    local cc = t .. "x"
    for i in function(_, i) i = (i or 0) + 1 if i <= 2 then return coroutine.yield(i) end end do end
    return "end", v, lt, cc
  end)
  say(gen(), gen("v"), gen(true), gen("cat"), gen(1), gen(2))
  -- Across a C-call boundary (sort's comparator): not yieldable, and the error says so.
  local cb = coroutine.wrap(function()
    local r = {}
    table.sort({3, 1, 2}, function(a, b) r[#r + 1] = tostring(coroutine.isyieldable()) return a < b end)
    local ok2, e2 = pcall(table.sort, {3, 1, 2}, function(a, b) coroutine.yield() return a < b end)
    return r[1], ok2, e2
  end)
  say(cb())
  -- Many values through resume and yield.
  local many = coroutine.wrap(function(...) local t = table.pack(coroutine.yield(select("#", ...))) return t.n end)
  say(many(table.unpack({}, 1, 5000)), many(table.unpack({}, 1, 7000)))
  -- Resuming dead and non-suspended coroutines.
  say(coroutine.resume(co))
  say(pcall(coroutine.resume, 1))
  say(coroutine.resume(coroutine.running()))
  -- A producer/consumer long enough to be sampled inside.
  local prod = coroutine.wrap(function() for i = 1, 2000 do coroutine.yield(i) end return nil end)
  local sum = 0
  for v in prod do sum = sum + v end
  say("sum", sum)
  return table.concat(log, "\n")
end

dofile("rounds.lua")(200, round)
-- Nested resumes up to the C stack limit: the same error.
local function nest(n) local co = coroutine.wrap(function() return nest(n + 1) end) return co() end
local ok, e = pcall(nest, 1)
print("nested resumes", ok, e)
-- Resumes nested as deep as Lua allows: the same depth (the profiler adds no C call level).
local depth = 0
local function dive()
  depth = depth + 1
  local ok, e = coroutine.resume(coroutine.create(dive))
  if not ok then error(e, 0) end
end
print("resume depth", pcall(dive), depth)
-- A __close that raises while a wrapped coroutine unwinds its error: the close's error goes on.
local wc = coroutine.wrap(function()
  local x <close> = setmetatable({}, {__close = function() error("in __close", 0) end})
  error("in body", 0)
end)
print("__close error through wrap", pcall(wc))
-- Closes nested through __close handlers: the same result at the same depth.
local function closer(nxt)
  local co = coroutine.create(function()
    local x <close> = setmetatable({}, {__close = function()
      if nxt then local ok, e = coroutine.close(nxt); if not ok then error(e, 0) end end
    end})
    coroutine.yield()
  end)
  coroutine.resume(co)
  return co
end
local top
for _ = 1, 300 do top = closer(top) end
print("close chain of 300", coroutine.close(top))
