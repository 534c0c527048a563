-- LuaRocks: `luarocks make` in the repository builds and installs the `profiler` module and the
-- luaprof and profconv tools for Lua 5.4 (CMake, the project's own build).
package = "scriptprof"
version = "scm-1"
source = { url = "git+file:///scriptprof" }  -- `luarocks make` builds the checkout it runs in
description = {
  summary = "A statistical profiler for Lua with Guile statprof semantics",
  detailed = [[
    require "profiler"; profiler.statprof(fn, 1000) samples fn's stacks 1000 times a second and
    prints the statprof flat report. Call counts, GC and allocation profiles, call graphs, and
    speedscope, pprof, folded stacks and Chrome trace files.
  ]],
}
dependencies = { "lua >= 5.4, < 5.5" }
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    SCRIPTPROF_TESTS = "OFF",
    SCRIPTPROF_SAMPLES = "OFF",
    SCRIPTPROF_INSTALL_DEV = "OFF",
    SCRIPTPROF_LUAJIT = "OFF",  -- this rock is for Lua 5.4
    SCRIPTPROF_LUA_MODULE_DIR = "$(LIBDIR)",
    CMAKE_INSTALL_BINDIR = "$(BINDIR)",
  },
}
