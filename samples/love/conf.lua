-- A small window, and no audio: the sample runs headless under xvfb-run in the tests.
function love.conf(t)
  t.window.title = "scriptprof: a LÖVE game under the profiler"
  t.window.width, t.window.height = 480, 320
  t.window.vsync = 0
  t.modules.audio, t.modules.sound, t.modules.joystick = false, false, false
end
