-- Recursion to the Lua stack limit and to the C stack limit: the errors are the same errors.
local function lua_deep(n) return 1 + lua_deep(n + 1) end
local function c_deep(t) return setmetatable({}, {__index = function(_, k) return c_deep(t)[k] end}) end
local depth_reached = 0
local function counted(n) depth_reached = n return 1 + counted(n + 1) end
-- LuaJIT: where a compiled recursion overflows depends on when its trace was made (the hot
-- counters are hashed by address), so there the recursions are compared on the interpreter.
if jit then jit.off(lua_deep) jit.off(counted) end
for r = 1, 2 do
  local ok, e = pcall(lua_deep, 1)
  local ok2, e2 = pcall(function() return c_deep({}).x end)
  local ok3, e3 = pcall(counted, 1)
  local ok4, e4 = pcall(string.gsub, "x", "x", function() return select(2, pcall(string.gsub, "x", "x", error)) end)
  local function mutual(n) return n > 0 and tostring(setmetatable({}, {__tostring = function() return mutual(n - 1) end})) or "bottom" end
  local ok5, e5 = pcall(mutual, 150)
  local ok6, e6 = pcall(mutual, 1000)
  if r == 1 then
    print(ok, e)
    print(ok2, e2)
    print(ok3, e3, depth_reached > 100000)
    print(ok4, e4)
    print(ok5, e5)
    print(ok6, e6)
  end
end
-- A message handler running at the stack limit (in the extra space Lua keeps for it).
local ok, m = xpcall(lua_deep, function(m) return "handled: " .. m .. " " .. type(debug.getinfo(2, "l")) end, 1)
print(ok, m)
