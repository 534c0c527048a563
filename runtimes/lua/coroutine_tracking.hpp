// coroutine.create/resume/close/wrap replacements that call the running release's own (same
// results, errors, messages, to-be-closed handling, C-call limit) and also tell the sampler
// which coroutine is running, so samples land in the coroutine and not in the code that
// resumed it.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Replaces create, resume, close and wrap in L's `coroutine` library table (and package.loaded's),
// where a mode needs every switch told (resume_chain.hpp says when).
void install_coroutine_tracking(lua_State* L);
// Puts the release's functions back where ours are (a table the program changed since keeps its
// own). Closures of ours the program kept still work, and still tell the sampler.
void remove_coroutine_tracking(lua_State* L);

// The release's own coroutine functions as L's library has them (through ours when they are
// installed); null where the library holds something else. close is null before 5.4.
struct ReleaseCoroutineFunctions {
  lua_CFunction resume = nullptr, close = nullptr, wrap = nullptr;
};
ReleaseCoroutineFunctions release_coroutine_functions(lua_State* L);

// The C function behind what the release's `wrap` returns (asked once, on a thread of L's that
// is garbage after); null when it raises or returns no C function.
lua_CFunction wrapped_by(lua_State* L, lua_CFunction wrap);

// The C function behind every function coroutine.wrap returns (so reports can name it).
lua_CFunction wrapped_coroutine_function();

}  // namespace scriptprof::lua
