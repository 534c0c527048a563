-- os.exit from inside the program: the status, the output written so far, closing the state.
io.write("buffered output ")
print("before exit")
local function deep(n) if n == 0 then
  local t <close> = setmetatable({}, {__close = function() print("closed by os.exit(_, true)") end})
  os.exit(arg[1] == "close" and 7 or 5, arg[1] == "close") end return deep(n - 1) end
local s = 0 for i = 1, 3e6 do s = s + i end
deep(100)
