/* scriptprof API for hosts that run AngelScript 2.35 (C++ hosts: AngelScript is C++). The
 * runtime-neutral calls (profiler, options, frames, profiles, reports, files) are scriptprof.h.
 *
 *   scriptprof_as_install_memory_functions();   // optional, before asCreateScriptEngine
 *   scriptprof_profiler* p;
 *   scriptprof_create(NULL, &p);
 *   scriptprof_as_start(p);                     // on the thread that runs the scripts
 *   ... scriptprof_as_execute(ctx) where the host called ctx->Execute() ...
 *   scriptprof_frame();                         // a game frame's end (optional)
 *   scriptprof_as_stop(p);                      //   the same thread; before the engine goes
 *   scriptprof_take_profile(p, &prof);          // then reports and files as for any host
 */
#ifndef SCRIPTPROF_ANGELSCRIPT_H
#define SCRIPTPROF_ANGELSCRIPT_H

#include <angelscript.h>

#include "scriptprof.h"

extern "C" {

/* Starts and stops sampling the contexts the calling thread runs through scriptprof_as_execute.
   Fails, naming the capability, for options AngelScript cannot serve (count_calls). */
scriptprof_status scriptprof_as_start(scriptprof_profiler* profiler);
scriptprof_status scriptprof_as_stop(scriptprof_profiler* profiler);
/* ctx->Execute(), sampled when a run is on this thread: returns what Execute() returns; a
   suspension the profiler asked for never reaches the caller. */
int scriptprof_as_execute(AS_NAMESPACE_QUALIFIER asIScriptContext* ctx);
/* ctx->Suspend() for the host's own suspensions (a script's wait()): scriptprof_as_execute
   returns asEXECUTION_SUSPENDED for them even when a sample falls on the same statement. */
void scriptprof_as_suspend(AS_NAMESPACE_QUALIFIER asIScriptContext* ctx);
/* Names ctx's process in the profiles ("enemy AI"); on the thread that runs it. */
scriptprof_status scriptprof_as_name_context(scriptprof_profiler* profiler, AS_NAMESPACE_QUALIFIER asIScriptContext* ctx,
                                             const char* name);
/* The host's co-routines: `parent`, running now on this thread, started `child`; child's samples
   then sit under parent's stack of now (parent NULL: no longer). During a run. */
scriptprof_status scriptprof_as_started_by(scriptprof_profiler* profiler, AS_NAMESPACE_QUALIFIER asIScriptContext* child,
                                           AS_NAMESPACE_QUALIFIER asIScriptContext* parent);
/* Installs the profiler's memory functions (allocation sampling), before the first
   asCreateScriptEngine. */
scriptprof_status scriptprof_as_install_memory_functions(void);

}

#endif /* SCRIPTPROF_ANGELSCRIPT_H */
