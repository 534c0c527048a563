-- (luaprof --serve ADDR --heap 4096 heap_work.lua STOPFILE) A heap whose live part is known by construction: keeper keeps 1000 blocks of about 1 KB,
-- dropper allocates as many and drops them. After a full collection it prints what keeper
-- left ("kept BYTES", Lua's own count) and waits, allocating nothing (so the heap served is
-- that collection's), until the file arg[1] exists.
kept = {}
local function keeper() for i = 1, 1000 do kept[i] = string.rep("k", 1000) .. i end end
local function dropper() local t = {} for i = 1, 1000 do t[i % 10 + 1] = string.rep("d", 1000) .. i end end
collectgarbage()
collectgarbage()
local before = collectgarbage("count")
keeper()
dropper()
collectgarbage()
print(string.format("kept\t%d", (collectgarbage("count") - before) * 1024))
io.stdout:flush()
local function exists(path) local f = io.open(path) if f then f:close() end return f ~= nil end
local x = 0
repeat for i = 1, 1e6 do x = x + i % 3 end until exists(arg[1])
print("result", #kept)
