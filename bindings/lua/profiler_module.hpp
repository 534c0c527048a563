// The Lua module `profiler` (require "profiler"): Guile statprof's API in Lua spelling.
#pragma once
extern "C" {
#include <lua.h>
}

extern "C" int luaopen_profiler(lua_State* L);
