-- The program's own hooks see the same events, in the same order, with the same arguments and
-- the same debug.getinfo answers, whatever the profiler does meanwhile: in the main thread and
-- in coroutines, hooks set inside a hook, hooks removed and replaced while the profiler runs.
local rounds = dofile("rounds.lua")

local log
-- What a hook sees of the function that caused the event (level 3: note, the hook, that one).
local function note(tag, event, line)
  local i = debug.getinfo(3, "nSltur")
  log[#log + 1] = table.concat({tag, event, tostring(line), tostring(i.name), i.namewhat, i.what, i.short_src,
    i.currentline, i.linedefined, i.lastlinedefined, tostring(i.istailcall), i.nparams, tostring(i.isvararg),
    i.ftransfer, i.ntransfer}, " ")
end
local function logger(tag) return function(event, line) note(tag, event, line) end end
local function gethook_text(co)
  local h, mask, count
  if co then h, mask, count = debug.gethook(co) else h, mask, count = debug.gethook() end
  return ("%s %s %s"):format(type(h), tostring(mask), tostring(count))
end

local function leaf(x) return x + 1 end
local function tail(n) if n == 0 then return 0 end return tail(n - 1) end
local function work(n)
  local s = 0
  for i = 1, n do s = leaf(s) + #tostring(i) end
  return s, tail(4), select("#", table.unpack({1, 2, 3}))
end

local function round()
  log = {}
  -- The main thread: calls, returns, tail calls and lines.
  debug.sethook(logger("main"), "crl")
  work(20)
  debug.sethook()
  log[#log + 1] = "after: " .. gethook_text()
  -- A count hook every 7 instructions, and what gethook says while it is set.
  debug.sethook(logger("count"), "", 7)
  work(40)
  log[#log + 1] = "while set: " .. gethook_text()
  debug.sethook()
  -- A coroutine hooked from outside before it first runs, resumed twice.
  local co = coroutine.create(function(a) local b = work(a) coroutine.yield(b) return work(3) end)
  debug.sethook(co, logger("co"), "crl")
  log[#log + 1] = "co: " .. gethook_text(co) .. " / main " .. gethook_text()
  log[#log + 1] = table.concat({tostring(coroutine.resume(co, 6))}, " ")
  log[#log + 1] = table.concat({tostring(coroutine.resume(co))}, " ")
  log[#log + 1] = "dead co: " .. gethook_text(co)
  -- A wrapped coroutine that sets its own hook, removes it, and reports what gethook said.
  local wrapped = coroutine.wrap(function()
    debug.sethook(logger("inside"), "l")
    work(3)
    local seen = gethook_text()
    debug.sethook()
    coroutine.yield(seen)
    return gethook_text()
  end)
  log[#log + 1] = "wrapped: " .. wrapped() .. " / " .. wrapped()
  -- A hook that replaces itself from inside with another hook, which then removes itself.
  local switched = false
  debug.sethook(function(event, line)
    note("first", event, line)
    if not switched then
      switched = true
      debug.sethook(function(e2, l2)
        note("second", e2, l2)
        if e2 == "return" then debug.sethook() end
      end, "cr")
    end
  end, "l")
  work(2)
  debug.sethook()
  log[#log + 1] = "replaced: " .. gethook_text()
  -- A hooked function that raises, and a hook that raises.
  debug.sethook(logger("error"), "cr")
  local ok, e = pcall(function() local t = nil; return t.x end)
  debug.sethook()
  log[#log + 1] = tostring(ok) .. " " .. tostring(e)
  debug.sethook(function(event)
    if event == "return" and debug.getinfo(2, "f").func == leaf then error("from the hook", 0) end
  end, "r")
  ok, e = pcall(work, 2)
  debug.sethook()
  log[#log + 1] = tostring(ok) .. " " .. tostring(e) .. " " .. gethook_text()
  return #log .. " events\n" .. table.concat(log, "\n")
end

rounds(8, round)
