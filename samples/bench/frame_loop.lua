-- A game's frame loop, profiled: per frame `step` then `paint` on 100 entities (3:1 CPU time),
-- then a sleep of 1 ms retried until whole (SDL_Delay's way under love.timer.sleep). Prints
-- step's share of step+paint samples against the truth, the thread's CPU clock measured
-- around each. Under LuaJIT (JIT on) the sleep and the clock are FFI calls; under Lua 5.4 they
-- come from the C module `frame_clock` that frame_truth.sh builds.
--   frame_loop.lua CLOCK HZ FRAMES
local clock_name, hz, frames = arg[1] or "cpu", tonumber(arg[2]) or 1000, tonumber(arg[3]) or 2000
local profiler = require "profiler"
local thread_cpu, nap
if jit then
  local ffi = require "ffi"
  ffi.cdef [[
    typedef struct { long tv_sec; long tv_nsec; } frame_loop_ts;
    int nanosleep(const frame_loop_ts *req, frame_loop_ts *rem);
    int clock_gettime(int clk, frame_loop_ts *tp);
  ]]
  local ts = ffi.new("frame_loop_ts")
  thread_cpu = function() ffi.C.clock_gettime(3, ts) return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
  nap = function(seconds)
    local req, rem = ffi.new("frame_loop_ts", 0, seconds * 1e9), ffi.new("frame_loop_ts")
    while ffi.C.nanosleep(req, rem) ~= 0 do req, rem = rem, req end
  end
else
  local c = require "frame_clock"
  thread_cpu, nap = c.thread_cpu, c.nap
end
-- The interpreter is slower than the JIT: the same ~1.5 ms of work a frame either way.
local work = jit and 1500 or 800
local state = {}
for e = 1, 100 do state[e] = e end
local function step(e)
  local s = state[e]
  for i = 1, work do s = (s * 1.0000001 + i) % 1000.5 end
  state[e] = s
end
local function paint(e)
  local s = state[e]
  for i = 1, math.floor(work / 3) do s = (s * 1.0000001 + i) % 1000.5 end
  state[e] = s
end
local t_step, t_paint = 0, 0
local function frame()
  local t0 = thread_cpu()
  for e = 1, 100 do step(e) end
  local t1 = thread_cpu()
  for e = 1, 100 do paint(e) end
  t_step, t_paint = t_step + (t1 - t0), t_paint + (thread_cpu() - t1)
  nap(0.001)
end
profiler.start_profiler{hz = hz, clock = clock_name}
for _ = 1, frames do frame() end
profiler.stop_profiler()
local function cum(f)
  local cd = profiler.proc_call_data(f)
  return cd and profiler.call_data_cum_samples(cd) or 0
end
local s, p = cum(step), cum(paint)
local truth, got = t_step / (t_step + t_paint), s / math.max(1, s + p)
print(("%-10s %-4s %5d Hz  step %.3f of %6d samples, truth %.3f: %+5.1f points  (%s)"):format(
  jit and "LuaJIT" or _VERSION, clock_name, hz, got, s + p, truth, 100 * (got - truth), profiler.health().timer))
