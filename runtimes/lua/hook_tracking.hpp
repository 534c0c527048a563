// debug.sethook and debug.gethook as Lua 5.4.4 has them, told to the sampler.
//
// The profiler puts its own hook on a thread (to take a pending sample, and on every thread
// while counting calls). A program that sets its hook meanwhile must not remove ours, and one
// that asks for its hook must get the one it set. These replacements do exactly what ldblib.c
// does (same checks, messages and registry table, and Lua's own hook function, found by setting
// a hook once), with the hook itself kept by the sampler.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Replaces debug.sethook/gethook in the loaded `debug` library (and the global `debug` table
// when it is another one). Does nothing when the debug library is not loaded.
void install_hook_tracking(lua_State* L);

}  // namespace scriptprof::lua
