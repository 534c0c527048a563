-- The program's own debug.sethook: its hook fires as it asked, gethook reports what it set,
-- and the profiler's presence is invisible.
local function work(n) local s = 0 for i = 1, n do s = s + (i % 3 == 0 and 1 or 0) end return s end
local function leaf(x) return x + 1 end
local function caller(n) local s = 0 for i = 1, n do s = leaf(s) end return s end
-- LuaJIT fires no count hook in compiled code, and whether `work` is compiled when its count
-- hook is set depends on its hot counter (hashed by address): its count is taken interpreted.
if jit then jit.off(work) end

print("no hook", debug.gethook())
for r = 1, 5 do
  -- Call and return events, exactly.
  local calls, rets, lines = 0, 0, 0
  debug.sethook(function(ev) if ev == "call" or ev == "tail call" then calls = calls + 1 elseif ev == "return" then rets = rets + 1 end end, "cr")
  local v = caller(20000)
  debug.sethook()
  -- Line events, exactly.
  local seen = {}
  debug.sethook(function(_, line) lines = lines + 1 seen[line] = true end, "l")
  work(20000)
  debug.sethook()
  -- Count events: one every 100 instructions.
  local counts = 0
  debug.sethook(function() counts = counts + 1 end, "", 100)
  work(200000)
  local h, mask, count = debug.gethook()
  debug.sethook()
  if r == 1 then
    print("call/return", v, calls, rets)
    print("lines", lines)
    print("count", counts)
    print("gethook while set", type(h), mask, count)
  end
end
-- A hook set on a coroutine, and one set inside it.
local co = coroutine.create(function()
  local n = 0
  debug.sethook(function() n = n + 1 end, "c")
  caller(1000)
  debug.sethook()
  return n
end)
print("coroutine's own hook", coroutine.resume(co))
local events = 0
local co2 = coroutine.create(function() caller(1000) return "ran" end)
debug.sethook(co2, function() events = events + 1 end, "r")
print("hook on a coroutine", coroutine.resume(co2), events)
print("main still unhooked", debug.gethook())
-- A hook that raises: the error comes out of the hooked code.
debug.sethook(function(ev, line) if line == debug.getinfo(1, "l").currentline + 3 then error("hook error", 0) end end, "l")
local ok, e = pcall(function()
  local a = 1
  local b = 2
  return a + b
end)
debug.sethook()
print("error from hook", ok, e)
print("after", debug.gethook())
-- Bad arguments: the release's own messages.
print("sethook without a mask", pcall(debug.sethook, function() end))
print("sethook with a number", pcall(debug.sethook, 42, "c"))
print("sethook on a thread, bad count", pcall(debug.sethook, coroutine.create(print), print, "c", "x"))
local function named() debug.sethook(print, 7) end
print("sethook from a named call", pcall(named))
-- gethook of another thread with a hook of its own, and of one without.
local co3 = coroutine.create(function() end)
local h3 = function() end
debug.sethook(co3, h3, "r", 3)
local f3, m3, c3 = debug.gethook(co3)
print("gethook of a hooked thread", f3 == h3, m3, c3)
debug.sethook(co3)
print("gethook of an unhooked thread", debug.gethook(co3))
-- Coroutines made while the program's hook is set inherit its mask and count (lua_newthread
-- copies them), before and after they first run: a tick landing in coroutine.create must not
-- leave the profiler's hook in their place.
local function hook_text(co) local f, m, c = debug.gethook(co) return tostring(f == nil) .. tostring(m) .. tostring(c) end
debug.sethook(function() end, "", 100000)
local seen = {}
for _ = 1, 20000 do
  local co = coroutine.create(function() local x = 0 for i = 1, 10 do x = x + i end return x end)
  local before = hook_text(co)
  coroutine.resume(co)
  local key = before .. " / " .. hook_text(co)
  seen[key] = (seen[key] or 0) + 1
end
debug.sethook()
for key, n in pairs(seen) do print("a new coroutine's hook", key, n) end
