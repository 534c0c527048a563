// The end of a profiled run (statprof, gcprof, with_profiling), however it ends.
//
// A run that displays its report must display it when the profiled function returns, when it
// raises (the report is written, then the error goes on unchanged), when the state is closed
// under it (os.exit(code, true) closes pending to-be-closed variables), and when the process
// exits under it (os.exit(code) calls exit(): an atexit handler writes it).
#pragma once
extern "C" {
#include <lua.h>
}

#include "module_sampler.hpp"

namespace scriptprof::lua {



// Pushes a guard for the run of `sampler`: make it to-be-closed. `file` (may be null: standard
// output) is copied. With display false the guard only stops the sampler.
void push_run_guard(lua_State* L, ModuleSampler* sampler, bool display, const char* file);

// The run ended normally: stops it and writes the report it owes. False, with the message
// pushed, when the report could not be written (the caller raises it).
bool run_guard_finish(lua_State* L, int idx);

// Registers the guard's metatable (once per state).
void register_run_guard(lua_State* L);

// The guard's __close, which the sampler must know as its own code.
lua_CFunction run_guard_close_function();

}  // namespace scriptprof::lua
