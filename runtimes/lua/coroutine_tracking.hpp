// coroutine.create/resume/close/wrap replacements that call the running release's own (same
// results, errors, messages, to-be-closed handling, C-call limit) and also tell the sampler
// which coroutine is running, so samples land in the coroutine and not in the code that
// resumed it.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Replaces create, resume, close and wrap in L's `coroutine` library table (and package.loaded's).
void install_coroutine_tracking(lua_State* L);

// The C function behind every function coroutine.wrap returns (so reports can name it).
lua_CFunction wrapped_coroutine_function();

}  // namespace scriptprof::lua
