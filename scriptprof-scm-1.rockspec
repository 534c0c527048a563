-- LuaRocks: `luarocks make` in the repository builds and installs the `profiler` module for the
-- Lua luarocks targets (5.1 to 5.4: `luarocks --lua-version 5.X make`) and the luaprof and
-- profconv tools (luaprof runs Lua 5.4) with CMake, the project's own build.
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
dependencies = { "lua >= 5.1, < 5.5" }
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    SCRIPTPROF_TESTS = "OFF",
    SCRIPTPROF_SAMPLES = "OFF",
    SCRIPTPROF_INSTALL_DEV = "OFF",
    SCRIPTPROF_LUAJIT = "OFF",  -- this rock is for PUC Lua
    -- Only the module of the Lua the rock is for is installed: no other Lua's, no AngelScript.
    SCRIPTPROF_OTHER_LUA_MODULES = "OFF",
    SCRIPTPROF_ANGELSCRIPT = "OFF",
    SCRIPTPROF_LUA_MODULE_DIR = "$(LIBDIR)",
    SCRIPTPROF_ROCK_LUA_INCDIR = "$(LUA_INCDIR)",
    CMAKE_INSTALL_BINDIR = "$(BINDIR)",
  },
}
