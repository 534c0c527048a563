// Which coroutine runs, found when a sample needs it rather than told at every switch. A
// coroutine resumed through the release's coroutine.resume, a coroutine.wrap function or
// coroutine.close runs on top of the thread that called it, which holds it in that call's frame
// until it yields or ends (thread_in_hand, lua_state_layout.hpp). Following those frames from a
// thread known to run (the main thread, or the end of the chain the sampler was told of) finds
// the running coroutine and its resumers, with nothing of ours on the switch path.
#pragma once
extern "C" {
#include <lua.h>
}

#include "scriptprof/process_chain.hpp"

namespace scriptprof::lua {

// Once per process, on a thread of L: whether the release's resume, wrap function and close
// (the functions of L's coroutine library, through our replacements if they are there) are
// found this way, by probe coroutines. When false the sampler must be told of every switch
// (install_coroutine_tracking). After verify_state_layout.
bool verify_resume_chain(lua_State* L);
// The release's wrap function (the C function of what coroutine.wrap returns), once verified.
lua_CFunction release_wrap_function();

// The coroutine running on top of L: L itself when it runs none, or when not verified. A
// coroutine that has not yet set its status to running (the first instructions of a resume)
// is not followed. Signal-safe (thread_in_hand, lua_status); a cycle (a resume raising because
// its coroutine is a resumer) ends after a bounded number of steps.
lua_State* running_end(lua_State* L);

// Adds to `chain`, from its running end, every coroutine found running on top of it up to
// `until` (normal context, for the sample taken in `until`).
void extend_chain(ProcessChain& chain, lua_State* until);

}  // namespace scriptprof::lua
