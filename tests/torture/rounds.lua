-- Runs `round` (which returns its output as text) `n` times, so that samples land inside every
-- case, and prints its output once; a round whose output differs is printed too, and so fails
-- the comparison with the plain run.
return function(n, round)
  local first
  for r = 1, n do
    local text = round()
    if not first then first = text elseif text ~= first then print("round " .. r .. " differs:\n" .. text) end
  end
  print(first)
end
