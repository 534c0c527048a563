-- System calls interrupted by the timer signal restart as without it: child processes, pipes,
-- sleeping and reading.
for r = 1, 3 do
  local a, b, c = os.execute("sleep 0.05")
  local d, e, f = os.execute("exit 3")
  local p = io.popen("sleep 0.05; printf 'line1\\nline2\\n'; sleep 0.05; printf 'tail'")
  local l1 = p:read("l")
  local rest = p:read("a")
  local g, h, i = p:close()
  local q = io.popen("head -c 300000 /dev/zero")
  local zeros = #q:read("a")
  q:close()
  local tmp = os.tmpname()
  local w = assert(io.open(tmp, "w")); for k = 1, 20000 do w:write(k, "\n") end; w:close()
  local n = 0
  for _ in io.lines(tmp) do n = n + 1 end
  os.remove(tmp)
  if r == 1 then print(a, b, c, d, e, f, l1, rest, g, h, i, zeros, n) end
end
-- Reading standard input (the test feeds it slowly through a pipe).
local got = {}
for line in io.lines() do got[#got + 1] = line end
print("stdin", #got, got[1], got[#got])
