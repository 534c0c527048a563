-- Coroutines that set their own hooks run, die and are collected during the run, and their
-- memory is reused by new objects: the profiler must keep nothing that names them (at the end
-- of the run it restored hooks on freed states). Live ones keep their hooks.
local rounds = dofile("rounds.lua")
local function round()
  local live = {}
  for i = 1, 1500 do
    local co = coroutine.create(function(n) debug.sethook(function() end, i % 2 == 0 and "l" or "c") coroutine.yield(n) return n end)
    coroutine.resume(co, i)
    if i % 100 == 0 then live[#live + 1] = co end
  end
  collectgarbage()
  collectgarbage()
  local reuse = {}
  for i = 1, 20000 do reuse[i] = {i, tostring(i)} end
  local hooked = 0
  for _, co in ipairs(live) do if debug.gethook(co) then hooked = hooked + 1 end end
  return ("%d live coroutines, %d hooked"):format(#live, hooked)
end
rounds(3, round)
