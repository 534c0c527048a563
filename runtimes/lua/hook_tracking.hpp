// debug.sethook and debug.gethook through the running release's own, told to the sampler.
//
// The profiler puts its own hook on a thread (to take a pending sample, and on every thread
// while counting calls). A program that sets its hook meanwhile must not remove ours, and one
// that asks for its hook must get the one it set. The replacements call the release's
// functions (its checks, messages, registry table and hook function), and the sampler keeps
// the program's hook under its own.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Replaces debug.sethook/gethook in the loaded `debug` library (and the global `debug` table
// when it is another one). Does nothing when the debug library is not loaded.
void install_hook_tracking(lua_State* L);

}  // namespace scriptprof::lua
