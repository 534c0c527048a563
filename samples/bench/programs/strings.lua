-- String building: arg[1] records formatted, concatenated, escaped and joined into lines, as a
-- logger or a serializer does; prints the total length and a checksum.
local n = tonumber(arg and arg[1]) or 200000
local names = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
local total, check = 0, 0
local lines = {}
for i = 1, n do
  local name = names[i % #names + 1]
  local fields = {
    string.format("%d", i),
    name .. "_" .. (i % 97),
    string.format("%.3f", i / 7),
    ("q\"%s\""):format(name):gsub('"', '\\"'),
  }
  local line = table.concat(fields, ",")
  lines[#lines + 1] = line
  if #lines == 64 then
    local block = table.concat(lines, "\n")
    total = total + #block
    check = (check + block:byte(math.floor(#block / 2) + 1)) % 65521
    lines = {}
  end
end
print(total, check)
