-- Errors at Lua's limits are the program's own: the profiler's hooks never need stack slots that
-- Lua alone would not, so no "stack overflow" appears where the program did not overflow, and a
-- recursion overflows at the same depth. Repeated, so that samples land in every case.
local rounds = dofile("rounds.lua")

local big = {}
for i = 1, 999990 do big[i] = i end
local depth = 0
local function dive(n) depth = n return 1 + dive(n + 1) end
local function count(...) return select("#", ...) end
-- LuaJIT (Lua 5.1) has a global unpack; and a compiled recursion overflows at a depth that
-- depends on when its trace was made (hot counters are hashed by address), so there the depth
-- is compared on the interpreter.
if jit then table.unpack = unpack; jit.off(dive) end

local function round()
  local out = {}
  -- Lua's own errors.lua: unpacking ever more values ends in "too many results to unpack".
  local ok, e = pcall(function() for i = 999900, 1000000 do table.unpack({}, 1, i) end end)
  out[#out + 1] = tostring(ok) .. " " .. tostring(e)
  -- Results near the limit consumed by a call that takes them all, or kept. (Not within
  -- EXTRA_STACK of the limit: there plain Lua's own answer depends on the size its stack has
  -- grown to, which its garbage collector's timing decides.)
  for _, n in ipairs({999900, 999920, 999940, 999970, 999990}) do
    local ok2, r = pcall(function() return select("#", table.unpack(big, 1, n)) end)
    local ok3, r3 = pcall(function() return count(table.unpack(big, 1, n)) end)
    local ok4, r4 = pcall(function() local t = {table.unpack(big, 1, n)} return #t end)
    out[#out + 1] = table.concat({n, tostring(ok2), tostring(r), tostring(ok3), tostring(r3), tostring(ok4), tostring(r4)}, " ")
  end
  -- A recursion overflows at the same depth with the same message.
  depth = 0
  local ok5, e5 = pcall(dive, 1)
  out[#out + 1] = tostring(ok5) .. " " .. tostring(e5) .. " at depth " .. depth
  -- The same recursion under a handler that looks at the stack.
  depth = 0
  local ok6, e6 = xpcall(dive, function(m) return m .. " / " .. debug.traceback("tb", 2):sub(1, 60) end, 1)
  out[#out + 1] = tostring(ok6) .. " " .. tostring(e6) .. " at depth " .. depth
  return table.concat(out, "\n")
end

rounds(2, round)
