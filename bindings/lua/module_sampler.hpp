// Which adapter the module is built on: one source, a build per Lua. Against PUC Lua's headers
// (5.1 to 5.5) the module drives the Lua adapter; in LuaJIT's build (SCRIPTPROF_LUAJIT), the
// LuaJIT adapter; lua_api_compat.hpp stands in for the 5.4 calls the module makes.
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#ifdef SCRIPTPROF_LUAJIT
#include "luajit_attach.hpp"
namespace scriptprof::lua {
using ModuleSampler = luajit::LuaJitSampler;
using SamplerSettings = luajit::SamplerSettings;
using SampleKind = scriptprof::SampleKind;
using SamplerStatus = scriptprof::RunStatus;
using luajit::attach_sampler;
// LuaJIT's heap is its own allocator's (lj_alloc): the module has nothing to keep out of it.
struct ModuleOwnWork {
  explicit ModuleOwnWork(ModuleSampler&) {}
};
}  // namespace scriptprof::lua
#else
#include "lua_attach.hpp"
namespace scriptprof::lua {
using ModuleSampler = LuaSampler;
using ModuleOwnWork = LuaSampler::OwnWork;  // what the module makes stays out of the host's heap
}  // namespace scriptprof::lua
#endif
