-- Library functions returning very many values, and varargs near the stack limit.
local t = {}
for i = 1, 200000 do t[i] = i end
local s = string.rep("x", 100000)
for r = 1, 30 do
  local n1 = select("#", table.unpack(t))
  local n2 = select("#", string.byte(s, 1, -1))
  local p = table.pack(table.unpack(t, 1, 150000))
  local n3 = select("#", string.format("%s", s):byte(1, 50000))
  local ok, e = pcall(table.unpack, t, 1, 1e7)
  local ok2, e2 = pcall(string.rep, "x", -1)
  local function count(...) return select("#", ...) end
  local n4 = count(table.unpack(t, 1, 100000))
  if r == 1 then print(n1, n2, p.n, n3, ok, e, ok2, e2, n4) end
end
-- As close to the stack limit as unpack allows: plain Lua returns every value (or refuses with
-- "too many results to unpack"); a return hook must not turn that into "stack overflow".
local big = {}
for i = 1, 999900 do big[i] = i end
for n = 999800, 999900, 25 do
  for r = 1, 3 do
    local ok, e = pcall(function() return select("#", table.unpack(big, 1, n)) end)
    if r == 1 then print(n, ok, e) end
  end
end
