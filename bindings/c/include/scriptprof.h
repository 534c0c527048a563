/* scriptprof C API, the runtime-neutral part: a profiler, options, native threads, zones and
 * fibers, frames, the zone log, and saved profiles (reports and files). A host that runs Lua
 * includes scriptprof_lua.h, which adds attaching lua_States.
 *
 * Every call returns a status; on failure scriptprof_error() gives the calling thread's last
 * message, naming the argument or file at fault. Nothing aborts, nothing throws.
 *
 *   scriptprof_profiler* p;
 *   scriptprof_create(NULL, &p);
 *   scriptprof_start_thread(p);          // sample this thread's native code as its zones
 *   ... zones ...
 *   scriptprof_stop_thread(p);
 *   scriptprof_profile* prof;
 *   scriptprof_take_profile(p, &prof);   // every thread, merged
 *   scriptprof_profile_write(prof, "lispworks", "profile.tree");
 *   scriptprof_profile_free(prof);
 *   scriptprof_destroy(p);
 */
#ifndef SCRIPTPROF_H
#define SCRIPTPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct scriptprof_profiler scriptprof_profiler;
typedef struct scriptprof_profile scriptprof_profile;
typedef struct scriptprof_fiber scriptprof_fiber;

typedef enum scriptprof_status {
  SCRIPTPROF_OK = 0,
  SCRIPTPROF_INVALID_ARGUMENT = 1, /* a null pointer, an unknown format or style, a bad option */
  SCRIPTPROF_INVALID_STATE = 2,    /* not attached, not started, started on another thread */
  SCRIPTPROF_SYSTEM_ERROR = 3,     /* the timer or signal handler could not be set up */
  SCRIPTPROF_IO_ERROR = 4,         /* a file could not be read or written, or is malformed */
  SCRIPTPROF_OUT_OF_MEMORY = 5
} scriptprof_status;

typedef struct scriptprof_options {
  double hz;           /* samples per second of the clock (default 100) */
  int wall_clock;      /* 0: thread CPU time (default); 1: wall time, sleeping included */
  int count_calls;     /* 1: exact call counts through Lua's call hook (costs time) */
  int full_stacks;     /* 1: keep every sample (timelines: chrome, lms; frame details) */
  uint64_t max_samples;/* stacks per thread before collection stops (default 100000; 0: none) */
  const char* signal;  /* the signal the timer delivers with: NULL for SIGRTMAX-3, else "SIGRTMIN+N",
                          "SIGRTMAX-N", "SIGPROF", "SIGUSR1", ... (the program keeps its own) */
} scriptprof_options;

/* Sets run option `name` from text, as luaprof's flag or the Lua module's key would: every option
   of the one table ("hz", "clock", "count_calls", "full_stacks", "gc", "alloc", "heap", "max_samples",
   "interpret_closures", "signal"; values "1000", "wall", "true", "65536", ...). Before any start,
   or between runs; SCRIPTPROF_INVALID_ARGUMENT names the option and the value. */
scriptprof_status scriptprof_set_option(scriptprof_profiler* profiler, const char* name, const char* value);

/* Serves Go's /debug/pprof endpoints at `address` ("127.0.0.1:6060"; ":6060" is loopback too;
   ":0" any free port) from the profiler's own threads:
   `go tool pprof http://ADDRESS/debug/pprof/profile?seconds=30` profiles every state and thread
   started from now on (each a process, named as in scriptprof_take_profile), which sample only
   while a request asks. Before any start; SCRIPTPROF_SYSTEM_ERROR when the port is taken. */
scriptprof_status scriptprof_serve(scriptprof_profiler* profiler, const char* address);
/* The same in continuous mode: between requests every thread samples at `hz` (19 is usual) and
   the last `window_seconds` (0: 600) are kept, at most 16 MiB a thread, for
   /debug/scriptprof/recent?seconds=N. */
scriptprof_status scriptprof_serve_continuous(scriptprof_profiler* profiler, const char* address, double hz,
                                              unsigned window_seconds);
/* The address served ("127.0.0.1:43121"), or "" when not serving; valid until the next call
   on the profiler. */
const char* scriptprof_serving_address(scriptprof_profiler* profiler);
/* Stops serving (a request under way answers 503). Threads started while serving stay served
   runs, sampling nothing, until they stop. */
scriptprof_status scriptprof_stop_serving(scriptprof_profiler* profiler);

/* The calling thread's message for its last failed call ("" if none). */
const char* scriptprof_error(void);

/* Fills `options` with the defaults. */
void scriptprof_options_init(scriptprof_options* options);

/* Creates a profiler (options NULL: defaults). */
scriptprof_status scriptprof_create(const scriptprof_options* options, scriptprof_profiler** out);
/* Frees it. Fails (and frees nothing) while a state is started on another thread. */
scriptprof_status scriptprof_destroy(scriptprof_profiler* profiler);

/* Starts and stops sampling the calling thread's native code, whose samples are its zones
   (the same as scriptprof_start(p, NULL) of scriptprof_lua.h). Each thread starts and stops
   its own. */
scriptprof_status scriptprof_start_thread(scriptprof_profiler* profiler);
scriptprof_status scriptprof_stop_thread(scriptprof_profiler* profiler);

/* Native zones: a shadow stack of named regions per fiber. A Lua sample taken inside zones
   shows them as its outer frames; a thread running native code is sampled as its zones.
   Intern a name once (scriptprof_zone_id), then begin/end it; ends must nest. */
uint32_t scriptprof_zone_id(const char* name);
void scriptprof_zone_begin(uint32_t zone);
void scriptprof_zone_end(uint32_t zone);

/* Fibers: each has its own zones (and, through scriptprof_lua.h, its own Lua state or
   coroutine). Call scriptprof_fiber_switch(f) right before switching to fiber f (NULL: back
   to the thread's own stack). A fiber stays on one thread. */
scriptprof_status scriptprof_fiber_create_native(const char* name, scriptprof_fiber** out);
void scriptprof_fiber_destroy(scriptprof_fiber* fiber);
void scriptprof_fiber_switch(scriptprof_fiber* to);
/* Names the calling thread in profiles ("render", "worker 1"). */
void scriptprof_name_thread(const char* name);

/* Marks a game frame's boundary on the calling thread; the "frames" report lists the
   average and the slowest frames. */
void scriptprof_frame(void);

/* The zone log: every zone begin and end, exact to the microsecond, as lms CSV. */
void scriptprof_zone_log_start(void);
scriptprof_status scriptprof_zone_log_write(const char* path);

/* Every thread's samples merged, a process per thread and fiber. All runs must be stopped. */
scriptprof_status scriptprof_take_profile(scriptprof_profiler* profiler, scriptprof_profile** out);
/* The same for a kind: "time" (as above), "gc" (with the gc option) or "space" (alloc). */
scriptprof_status scriptprof_take_profile_of(scriptprof_profiler* profiler, const char* kind, scriptprof_profile** out);
/* Drops everything collected so far (all runs must be stopped); attached states stay attached. */
scriptprof_status scriptprof_reset(scriptprof_profiler* profiler);
/* Reads a saved profile (format NULL or "": guessed from the contents). */
scriptprof_status scriptprof_profile_read(const char* path, const char* format, scriptprof_profile** out);
/* Writes a file format: lispworks, folded, speedscope, chrome, pprof, html, sampler, lms. */
scriptprof_status scriptprof_profile_write(const scriptprof_profile* profile, const char* format, const char* path);
/* A report as text (free it with scriptprof_string_free): flat, flat-guile2, tree, anomalies,
   gprof, gprof-callgraph, allegro, allegro-callgraph, call-counts, frames. */
scriptprof_status scriptprof_profile_report(const scriptprof_profile* profile, const char* style, char** text);
/* The "frames" report listing the `slowest` longest frames of each thread (the style lists 5;
   0 gives only each thread's count, average and longest). */
scriptprof_status scriptprof_profile_frames(const scriptprof_profile* profile, size_t slowest, char** text);
/* Total sample weight and number of processes (threads and fibers) of a profile. */
uint64_t scriptprof_profile_samples(const scriptprof_profile* profile);
size_t scriptprof_profile_processes(const scriptprof_profile* profile);
void scriptprof_profile_free(scriptprof_profile* profile);
void scriptprof_string_free(char* text);

#ifdef __cplusplus
}
#endif

#endif /* SCRIPTPROF_H */
