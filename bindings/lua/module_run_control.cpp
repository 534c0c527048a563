// Running: statprof, gcprof, with_profiling, start/stop and the Allegro controls, status.
#include "module_internal.hpp"
#include "profiler_module.hpp"

#include <cmath>
#include <string>

extern "C" {
#include <lauxlib.h>
}

#include "run_guard.hpp"

namespace scriptprof::lua::module {

// Starts a run; `options` (a stack index, or 0) gives the count list and the excluded processes.
void start_or_raise(lua_State* L, const SamplerSettings& settings, int options = 0) {
  ModuleSampler* s = attach_sampler(L);
  if (s->engine().active()) luaL_error(L, "the profiler is already active (call profiler.stop() first)");
  if (options) lua_getfield(L, options, "count_list");
  else lua_pushnil(L);
  s->set_count_list(L, -1);  // nil clears
  lua_pop(L, 1);
  if (options && lua_getfield(L, options, "except_processes") == LUA_TTABLE) {
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTHREAD; ++i) {
      if (!s->set_process_profiled(L, lua_tothread(L, -1), false))
        luaL_error(L, "cannot exclude except_processes[%d]: its stack is full", static_cast<int>(i));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);  // the nil that ended the list
  }
  if (options) lua_pop(L, 1);
  std::string error;
  if (!s->start(L, settings, &error)) {
    lua_pushfstring(L, "cannot start the profiler: %s", error.c_str());
    error.clear();
    error.shrink_to_fit();
    lua_error(L);
  }
}

// A new run: fresh profiles, then start. reset() leaves an active run alone, and
// start_or_raise then refuses it.
void start_fresh_or_raise(lua_State* L, const RunOptions& o) {
  attach_sampler(L)->reset();
  start_or_raise(L, o.sampler, o.table);
}

// A fresh run for run_profiled, with its guard at 3 above fn (1) and the options (2). Program
// time is held until fn is called: a tick due while the guard is set up would otherwise land on
// fn's first instruction.
ModuleSampler* begin_run(lua_State* L, RunOptions& o) {
  lua_settop(L, 2);
  o.sampler.hold_clock = true;
  ModuleSampler* s = attach_sampler(L);
  ModuleOwnWork own(*s);
  start_fresh_or_raise(L, o);
  push_run_guard(L, s, o.display, o.file);
  return s;
}

#if LUA_VERSION_NUM < 504
// Before 5.4 (and on LuaJIT) there are no to-be-closed variables: fn runs under lua_pcall, and
// an error stops the run and writes its report (the guard's __close), then goes on with the same
// value. The stack: 1 fn, 2 options, 3 the run guard, then the last call's results.
int run_profiled(lua_State* L, RunOptions o) {
  ModuleSampler* s = begin_run(L, o);
  for (lua_Integer left = o.loop; left > 0; --left) {
    lua_settop(L, 3);
    lua_pushvalue(L, 1);
    s->engine().release_clock();
    if (lua_pcall(L, 0, LUA_MULTRET, 0) != 0) {
      lua_pushcfunction(L, run_guard_close_function());
      lua_pushvalue(L, 3);
      lua_call(L, 1, 0);
      return lua_error(L);
    }
  }
  const int nresults = lua_gettop(L) - 3;
  if (!run_guard_finish(L, 3)) return lua_error(L);
  return nresults;
}
#else
// The stack of a run in progress: 1 fn, 2 options, 3 the run guard (to-be-closed: an error or
// a lua_close stops the profiler and writes the report; the error passes through unchanged),
// 4 calls left, then the last call's results. A continuation, so fn may yield across it.
int run_next(lua_State* L, int, lua_KContext) {
  while (lua_tointeger(L, 4) > 0) {
    lua_settop(L, 4);
    lua_pushinteger(L, lua_tointeger(L, 4) - 1);
    lua_replace(L, 4);
    lua_pushvalue(L, 1);
    attach_sampler(L)->engine().release_clock();
    lua_callk(L, 0, LUA_MULTRET, 0, run_next);
  }
  int nresults = lua_gettop(L) - 4;
  if (!run_guard_finish(L, 3)) return lua_error(L);
  return nresults;
}

// Runs fn (at 1) `o.loop` times in a fresh run with options `o` (from 2); returns its results.
int run_profiled(lua_State* L, RunOptions o) {
  begin_run(L, o);
  lua_toclose(L, 3);
  lua_pushinteger(L, o.loop);
  return run_next(L, LUA_OK, 0);
}
#endif

// profiler.statprof(fn [, hz | options]) -> fn's results
int l_statprof(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  return run_profiled(L, parse_run_options(L, 2));
}

// profiler.gcprof(fn [, options]) -> fn's results: a stack sample after every GC cycle
// (statprof's gcprof), shown with the flat display.
int l_gcprof(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  RunOptions o = parse_run_options(L, 2);
  o.sampler.sample_time = false;
  o.sampler.gc_samples = true;
  return run_profiled(L, o);
}

// profiler.with_profiling(options, fn) -> fn's results (Allegro's with-profiling): a fresh
// run around fn, displayed only when options.display is true.
int l_with_profiling(lua_State* L) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_insert(L, 1);  // (fn, options), as statprof takes them
  RunOptions o = parse_run_options(L, 2);
  if (!o.table || lua_getfield(L, 2, "display") == LUA_TNIL) o.display = false;
  if (o.table) lua_pop(L, 1);
  return run_profiled(L, o);
}

// profiler.start_profiler([options]): a fresh run (Allegro's start-profiler); with
// start_sampling=false it starts suspended.
int l_start_profiler(lua_State* L) {
  start_fresh_or_raise(L, parse_run_options(L, 1));
  return 0;
}

ModuleSampler* resume_or_raise(lua_State* L, bool hold_clock) {
  ModuleSampler* s = attach_sampler(L);
  if (!s->engine().active()) luaL_error(L, "the profiler is not started (call profiler.start_profiler first)");
  std::string error;
  if (!s->resume_sampling(L, &error, hold_clock)) {
    lua_pushfstring(L, "cannot resume sampling: %s", error.c_str());
    error = std::string();
    lua_error(L);
  }
  return s;
}

int l_start_sampling(lua_State* L) {
  resume_or_raise(L, false);
  return 0;
}

int l_stop_sampling(lua_State* L) {
  attach_sampler(L)->engine().suspend();
  return 0;
}

int sampling_guard_close(lua_State* L) {
  attach_sampler(L)->engine().suspend();
  return 0;
}


#if LUA_VERSION_NUM < 504
// profiler.with_sampling(fn, ...) -> fn's results: samples only while fn runs (an error in fn
// suspends, then goes on with the same value).
int l_with_sampling(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  const int nargs = lua_gettop(L) - 1;
  ModuleSampler* s = resume_or_raise(L, true);  // held until fn is called, as in run_profiled
  s->engine().release_clock();
  const int status = lua_pcall(L, nargs, LUA_MULTRET, 0);
  s->engine().suspend();
  if (status != 0) return lua_error(L);
  return lua_gettop(L);
}
#else
// with_sampling's end: fn's results are above the guard at 1.
int with_sampling_done(lua_State* L, int, lua_KContext) {
  attach_sampler(L)->engine().suspend();
  return lua_gettop(L) - 1;
}

// profiler.with_sampling(fn, ...) -> fn's results: samples only while fn runs.
int l_with_sampling(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int nargs = lua_gettop(L) - 1;
  ModuleSampler* s = resume_or_raise(L, true);  // held until fn is called, as in run_profiled
  lua_newuserdatauv(L, 0, 0);
  luaL_setmetatable(L, kSamplingGuardMeta);
  lua_insert(L, 1);  // guard, fn, args...: an error in fn still suspends
  lua_toclose(L, 1);
  s->engine().release_clock();
  lua_callk(L, nargs, LUA_MULTRET, 0, with_sampling_done);  // fn may yield across it
  return with_sampling_done(L, LUA_OK, 0);
}
#endif

// profiler.status() -> "inactive" | "suspended" | "sampling" | "saved" | "analyzed"
int l_status(lua_State* L) {
  static const char* const names[] = {"inactive", "suspended", "sampling", "saved", "analyzed"};
  lua_pushstring(L, names[static_cast<int>(attach_sampler(L)->engine().status())]);
  return 1;
}

// profiler.profile_process_p(thread [, flag]) -> flag: whether a coroutine (or the main
// thread) is profiled; setting false excludes it (Allegro's mp:profile-process-p).
int l_profile_process_p(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  ModuleSampler* s = attach_sampler(L);
  lua_State* thread = lua_tothread(L, 1);
  if (!lua_isnone(L, 2) && !s->set_process_profiled(L, thread, lua_toboolean(L, 2)))
    luaL_error(L, "cannot change whether the thread is profiled: its stack is full");
  lua_pushboolean(L, s->process_profiled(thread));
  return 1;
}

// profiler.closure(n) -> closure number n of the last run with interpret_closures (or nil).
int l_closure(lua_State* L) {
  attach_sampler(L)->push_closure(L, luaL_checkinteger(L, 1));
  return 1;
}

// profiler.frame(): a game frame ends here (the "frames" report lists the slowest).
int l_frame(lua_State* L) {
  attach_sampler(L)->mark_frame();
  return 0;
}

// profiler.reset(secs, usecs, count_calls [, full_stacks [, clock]])
int l_reset(lua_State* L) {
  double secs = luaL_checknumber(L, 1);
  double usecs = luaL_checknumber(L, 2);
  double period = secs + usecs / 1e6;
  if (std::isnan(period) || !(period >= 1.0 / kMaxHz))
    luaL_argerror(L, 1, "the sampling period must be at least 10 microseconds (100000 Hz)");
  if (attach_sampler(L)->engine().active()) luaL_error(L, "cannot reset while the profiler is active");
  SamplerSettings& st = module_state(L)->settings;
  st.period_ns = static_cast<std::uint64_t>(std::llround(period * 1e9));
  st.count_calls = lua_toboolean(L, 3);
  st.full_stacks = lua_toboolean(L, 4);
  if (!lua_isnoneornil(L, 5)) set_run_option(L, 5, &st, "clock", 5, true);
  attach_sampler(L)->reset();
  return 0;
}

int l_start(lua_State* L) {
  start_or_raise(L, module_state(L)->settings);
  return 0;
}

int l_stop(lua_State* L) {
  stop_serving(L);  // a served run ends with its server
  attach_sampler(L)->stop();
  return 0;
}

int l_active(lua_State* L) {
  lua_pushboolean(L, attach_sampler(L)->engine().active());
  return 1;
}

int l_accumulated_time(lua_State* L) {
  lua_pushnumber(L, attach_sampler(L)->engine().accumulated_seconds());
  return 1;
}

int l_sample_count(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(last_profile(L).sample_count()));
  return 1;
}

}  // namespace scriptprof::lua::module
