-- Allocation and collection: binary trees of arg[1] levels, built and walked many times.
local depth = tonumber(arg and arg[1]) or 14
local function make(d) if d == 0 then return {} end return {make(d - 1), make(d - 1)} end
local function check(t) if not t[1] then return 1 end return 1 + check(t[1]) + check(t[2]) end
local sum = 0
for d = 4, depth, 2 do
  for _ = 1, 2 ^ (depth - d + 4) do sum = sum + check(make(d)) end
end
print(sum)
