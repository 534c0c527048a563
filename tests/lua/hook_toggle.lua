-- A program that sets and clears a line hook of its own 200,000 times and counts the events
-- its hook sees: profiled, a tick may land between lua_sethook's writes (or, under LuaJIT, in
-- its dispatch update), and an arm that mistook that moment lost the program's events.
-- Returns the events seen and the hook left after; profiled with `opts` when given.
return function(profiler, opts)
  local events = 0
  local function count() events = events + 1 end
  if opts then profiler.start_profiler(opts) end
  for _ = 1, 200000 do
    debug.sethook(count, "l")
    local a = 1
    local b = a + 1
    debug.sethook()
  end
  if opts then profiler.stop_profiler() end
  return events, debug.gethook()
end
