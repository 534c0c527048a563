-- A ring of coroutines passing a token: arg[1] passes among 503.
local n = tonumber(arg and arg[1]) or 2000000
local ring = {}
for i = 1, 503 do
  ring[i] = coroutine.wrap(function(token)
    while true do token = coroutine.yield(token - 1) end
  end)
end
local token, i = n, 1
while token > 0 do
  token = ring[i](token)
  i = i % 503 + 1
end
print(i)
