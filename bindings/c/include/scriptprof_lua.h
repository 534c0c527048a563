/* scriptprof C API for hosts that run Lua 5.4: attach each lua_State, start and stop it on its
 * thread, tell the profiler about coroutines resumed from C and fibers that run Lua. The
 * runtime-neutral calls (profiler, options, zones, profiles) are in scriptprof.h.
 *
 *   scriptprof_profiler* p;
 *   scriptprof_create(NULL, &p);
 *   scriptprof_attach(p, L);             // on the thread that runs L
 *   scriptprof_start(p, L);              //   the same thread
 *   ... run Lua ...
 *   scriptprof_stop(p, L);               //   the same thread
 *   scriptprof_profile* prof;
 *   scriptprof_take_profile(p, &prof);   // every thread, merged
 *   scriptprof_profile_write(prof, "lispworks", "profile.tree");
 *   scriptprof_profile_free(prof);
 *   scriptprof_destroy(p);
 */
#ifndef SCRIPTPROF_LUA_H
#define SCRIPTPROF_LUA_H

#include "scriptprof.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lua_State lua_State;

/* Registers a Lua state; call on the thread that runs it. */
scriptprof_status scriptprof_attach(scriptprof_profiler* profiler, lua_State* L);
/* Forgets it; what it collected stays. Closing the state (lua_close) also ends its run. */
scriptprof_status scriptprof_detach(scriptprof_profiler* profiler, lua_State* L);
/* Starts and stops sampling the calling thread, which runs L. L NULL: a thread running only
   native code, whose samples are its zones. Each thread starts and stops its own. */
scriptprof_status scriptprof_start(scriptprof_profiler* profiler, lua_State* L);
scriptprof_status scriptprof_stop(scriptprof_profiler* profiler, lua_State* L);

/* A host that resumes coroutines itself calls these around lua_resume(co, from, ...), so
   samples go to the coroutine that runs (Lua code using coroutine.resume needs nothing). */
void scriptprof_enter_coroutine(lua_State* from, lua_State* co);
void scriptprof_leave_coroutine(lua_State* co, lua_State* from);

/* A fiber that runs its own Lua state or coroutine (L, may be NULL: native code only). */
scriptprof_status scriptprof_fiber_create(const char* name, lua_State* L, scriptprof_fiber** out);

#ifdef __cplusplus
}
#endif

#endif /* SCRIPTPROF_LUA_H */
