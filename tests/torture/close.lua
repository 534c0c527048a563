-- To-be-closed variables: every exit of a scope runs __close once, in reverse order, with the
-- error if there is one; errors inside __close replace the error in flight.
local log
local function closer(name) return setmetatable({}, {__close = function(_, e) log[#log + 1] = name .. ":" .. tostring(e) end}) end
local function failing(name) return setmetatable({}, {__close = function(_, e) log[#log + 1] = name .. ":" .. tostring(e); error(name .. " failed", 0) end}) end

local function round()
  log = {}
  do local a <close> = closer("a"); local b <close> = closer("b") end
  for i = 1, 3 do local c <close> = closer("loop" .. i); if i == 2 then break end end
  local function ret() local d <close> = closer("ret"); return "r1", "r2" end
  log[#log + 1] = table.concat({ret()}, ",")
  do
    local ok, e = pcall(function() local e1 <close> = closer("e1"); local e2 <close> = closer("e2"); error("boom", 0) end)
    log[#log + 1] = tostring(ok) .. " " .. tostring(e)
  end
  do
    local ok, e = pcall(function() local f1 <close> = failing("f1"); local f2 <close> = failing("f2"); error("orig", 0) end)
    log[#log + 1] = tostring(ok) .. " " .. tostring(e)
  end
  do
    local ok, e = pcall(function() local x <close> = 42 end)
    log[#log + 1] = tostring(ok) .. " " .. tostring(e)
  end
  do local n <close> = nil; local f <close> = false end
  -- goto out of a block closes it.
  do
    local i = 0
    ::again::
    do local g <close> = closer("goto" .. i); i = i + 1; if i < 3 then goto again end end
  end
  -- The generic for closes its fourth value when the loop ends or breaks.
  local function iter(n) return function(_, i) if i < n then return i + 1 end end, nil, 0, closer("for" .. n) end
  for i in iter(3) do if i == 2 then break end end
  for i in iter(2) do end
  -- A coroutine suspended inside a scope: coroutine.close runs the pending __close.
  local co = coroutine.create(function() local c1 <close> = closer("co1"); coroutine.yield(1); log[#log + 1] = "never" end)
  coroutine.resume(co)
  local closed = coroutine.close(co)  -- before the assignment below takes its index
  log[#log + 1] = "close " .. tostring(closed) .. " " .. coroutine.status(co)
  local co2 = coroutine.create(function() local c2 <close> = failing("co2"); coroutine.yield() end)
  coroutine.resume(co2)
  local ok2, e2 = coroutine.close(co2)
  log[#log + 1] = "close " .. tostring(ok2) .. " " .. tostring(e2)
  -- A closing error inside a wrapped coroutine propagates.
  local w = coroutine.wrap(function() local c3 <close> = closer("w"); error("wrapped", 0) end)
  local _, we = pcall(w)
  log[#log + 1] = tostring(we)
  -- Yield inside __close.
  local co3 = coroutine.wrap(function()
    local y <close> = setmetatable({}, {__close = function() coroutine.yield("from close") end})
    return "body"
  end)
  local y1 = co3()
  local y2 = co3()
  log[#log + 1] = y1 .. " " .. tostring(y2)
  return table.concat(log, "\n")
end

dofile("rounds.lua")(400, round)
