// Attaching the LuaJIT sampler to a VM, for the module (require "profiler" from luajit).
#pragma once
extern "C" {
#include <lua.h>
}

#include "luajit_sampler.hpp"

namespace scriptprof::luajit {

// The sampler of L's VM, created on first use: it lives in L's registry and is freed (its run
// stopped) with the state, at lua_close.
LuaJitSampler* attach_sampler(lua_State* L);

}  // namespace scriptprof::luajit
