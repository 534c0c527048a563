-- Runs a torture script through the Lua module: `lua5.4 under_statprof.lua MODE REPORT script
-- [args]`. MODE "plain" runs it without the profiler but in the same shape: called from a C
-- function (string.gsub's replacement function) on the same line, so tracebacks, C-stack depth
-- and function names match; the runner reads both C functions' names as one.
local mode, report, script = arg[1], arg[2], arg[3]
local modes = {
  cpu10k = {hz = 10000},
  wall10k = {hz = 10000, clock = "wall"},
  calls = {count_calls = true},
  gc = {hz = false, gc = true},
  alloc = {hz = false, alloc = 4096},
  all = {hz = 10000, count_calls = true, gc = true, alloc = 4096, full_stacks = true},
}
local script_arg = {[0] = script, (table.unpack or unpack)(arg, 4)}
arg = script_arg
local function body() dofile(script) end
local opts = modes[mode] or assert(mode == "plain" and {}, "unknown mode " .. tostring(mode))
opts.display, opts.file = true, report
local profiler = mode ~= "plain" and require("profiler")
if profiler then profiler.statprof(body, opts) else string.gsub("x", "x", body) end
