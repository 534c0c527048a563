// Attaching the sampler to a Lua universe.
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_sampler.hpp"

namespace scriptprof::lua {

// The sampler of L's universe, created on first use: it lives in L's registry and is freed
// with the state (lua_close). Creating it installs the coroutine tracking.
LuaSampler* attach_sampler(lua_State* L);

}  // namespace scriptprof::lua
