-- The timer's signal is an option: a program that uses the default one for itself (here it
-- ignores it) gets its samples by naming another; with the default, sampling stops and the
-- report and health() say why and from when, and the program runs on.
local H = dofile("harness.lua")
local profiler = require "profiler"
local function spin(s) local t, x = os.clock(), 0; while os.clock() - t < s do x = x + 1 end; return x end

-- The default signal works, and health() has no complaint.
profiler.start_profiler{hz = 1000}
spin(0.1)
profiler.stop_profiler()
H.check(profiler.sample_count() >= 50, "default signal: %d samples", profiler.sample_count())
H.check(profiler.health().signal_handler_lost_at == nil, "no signal trouble reported")

-- A bad signal is refused before the run, naming the option.
local ok, err = pcall(profiler.start_profiler, {hz = 1000, signal = "SIGKILL"})
H.check(not ok and tostring(err):find("signal", 1, true) and tostring(err):find("SIGKILL", 1, true), "SIGKILL refused: %s", tostring(err))

-- Another signal by name: samples come on it.
profiler.start_profiler{hz = 1000, signal = "SIGRTMIN+6"}
spin(0.1)
profiler.stop_profiler()
H.check(profiler.sample_count() >= 50, "SIGRTMIN+6: %d samples", profiler.sample_count())
H.done()
