-- A small LÖVE game profiled from love.load, with a frame marker per game frame. At quit it
-- prints the statprof report and writes a speedscope file (open it at speedscope.app).
--   xvfb-run -a love samples/love            (build/lib/luajit/profiler.so from the build)
-- Environment: SCRIPTPROF_LUAJIT_CPATH (where profiler.so is, a package.cpath pattern),
-- SCRIPTPROF_LOVE_FRAMES (frames before quitting, default 300), SCRIPTPROF_LOVE_OUT (the
-- speedscope file, default love_profile.speedscope.json in the working directory),
-- SCRIPTPROF_LOVE_HZ and SCRIPTPROF_LOVE_CLOCK (default 1000 and wall). At quit it also prints
-- the truth: love.update's share of update and draw by the main thread's CPU clock, measured
-- around each callback, beside the profile's.
-- SCRIPTPROF_LOVE_SERVE=ADDRESS serves the game instead (profiler.serve: `go tool pprof
-- http://ADDRESS/debug/pprof/profile?seconds=10` while it runs; it prints the address it
-- listens at), until SCRIPTPROF_LOVE_FRAMES frames or the file SCRIPTPROF_LOVE_QUIT exists.
local profiler, serving
local quit_file = os.getenv("SCRIPTPROF_LOVE_QUIT")
local frames, max_frames = 0, tonumber(os.getenv("SCRIPTPROF_LOVE_FRAMES")) or 300
local entities = {}

-- The main thread's CPU clock (CLOCK_THREAD_CPUTIME_ID), for the truth printed at quit.
local ffi = require "ffi"
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } scriptprof_love_ts;
int clock_gettime(int clk, scriptprof_love_ts *tp);
]]
local ts = ffi.new("scriptprof_love_ts")
local function thread_cpu() ffi.C.clock_gettime(3, ts) return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
local in_update, in_draw = 0, 0

-- The game's logic, in the functions a designer would look for in the report.
local function steer(e, dt)
  local dx, dy = 240 - e.x, 160 - e.y
  local d = math.sqrt(dx * dx + dy * dy) + 1
  e.vx = e.vx + dx / d * 40 * dt
  e.vy = e.vy + dy / d * 40 * dt
end

local function move(e, dt)
  e.x, e.y = e.x + e.vx * dt, e.y + e.vy * dt
  if e.x < 0 or e.x > 480 then e.vx = -e.vx end
  if e.y < 0 or e.y > 320 then e.vy = -e.vy end
end

local function collide()
  local hits = 0
  for i = 1, #entities, 4 do
    local a = entities[i]
    for j = i + 1, #entities do
      local b = entities[j]
      local dx, dy = a.x - b.x, a.y - b.y
      if dx * dx + dy * dy < 16 then hits = hits + 1 end
    end
  end
  return hits
end

function love.load()
  package.cpath = (os.getenv("SCRIPTPROF_LUAJIT_CPATH") or love.filesystem.getSource() .. "/../../build/lib/luajit/?.so")
                  .. ";" .. package.cpath
  profiler = require "profiler"
  local options = { hz = tonumber(os.getenv("SCRIPTPROF_LOVE_HZ")) or 1000,
                    clock = os.getenv("SCRIPTPROF_LOVE_CLOCK") or "wall" }
  serving = os.getenv("SCRIPTPROF_LOVE_SERVE")
  if serving then
    options.address = serving
    print("love: serving profiles at http://" .. profiler.serve(options) .. "/debug/pprof/")
    io.stdout:flush()
  else
    profiler.start_profiler(options)
  end
  love.math.setRandomSeed(7)
  for i = 1, 600 do
    entities[i] = { x = love.math.random(0, 480), y = love.math.random(0, 320),
                    vx = love.math.random(-50, 50), vy = love.math.random(-50, 50) }
  end
end

function love.update(dt)
  profiler.frame()  -- a frame marker: the frames report and the Chrome trace show each frame
  local t0 = thread_cpu()
  dt = math.min(dt, 1 / 30)
  for _, e in ipairs(entities) do
    steer(e, dt)
    move(e, dt)
  end
  collide()
  frames = frames + 1
  if frames >= max_frames then love.event.quit() end
  if quit_file and frames % 30 == 0 then
    local f = io.open(quit_file)
    if f then f:close() love.event.quit() end
  end
  in_update = in_update + thread_cpu() - t0
end

function love.draw()
  local t0 = thread_cpu()
  for _, e in ipairs(entities) do love.graphics.circle("fill", e.x, e.y, 2) end
  love.graphics.print(string.format("frame %d", frames), 8, 8)
  in_draw = in_draw + thread_cpu() - t0
end

function love.quit()
  if serving then  -- its profiles went to its clients
    profiler.stop_serving()
    print("love: stopped serving after " .. frames .. " frames")
    return false
  end
  profiler.stop()
  profiler.display()
  -- Each callback's samples on the CPU: under the wall clock, the time a callback spent blocked
  -- (waiting for the renderer) is a "(blocked)" leaf beneath it, which the thread's CPU clock
  -- does not count.
  local on_cpu = {}
  local function walk(node, callback)
    callback = callback or (node.name:match("^love%.update ") and "update") or (node.name:match("^love%.draw ") and "draw")
    if callback and node.name ~= "(blocked)" then on_cpu[callback] = (on_cpu[callback] or 0) + node.self end
    for _, child in ipairs(node) do walk(child, callback) end
  end
  for _, root in ipairs(profiler.fetch_call_tree()) do walk(root) end
  local u, d = on_cpu.update or 0, on_cpu.draw or 0
  print(string.format("update share: profile %.3f of %d samples on the CPU, truth %.3f (thread CPU clock)",
                      u / math.max(u + d, 1), u + d, in_update / math.max(in_update + in_draw, 1e-9)))
  local out = os.getenv("SCRIPTPROF_LOVE_OUT") or "love_profile.speedscope.json"
  profiler.write(out, "speedscope")
  print("wrote " .. out .. " (" .. frames .. " frames)")
  return false
end
