// The Lua module `profiler`: Guile statprof's API in Lua spelling, on the last run.
#include "profiler_module.hpp"

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}

#include <algorithm>
#include <cerrno>
#include <new>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lua_attach.hpp"
#include "lua_source_text.hpp"
#include "profile_object.hpp"
#include "run_guard.hpp"
#include "scriptprof/annotated_source.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/call_stats.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/statprof_flat_report.hpp"

namespace scriptprof::lua {

constexpr double kMaxHz = 100000.0;

bool parse_hz(double hz, std::uint64_t* period_ns, std::string* error) {
  if (std::isnan(hz) || !(hz > 0.0) || hz > kMaxHz) {
    char buf[64];
    if (std::isnan(hz)) std::snprintf(buf, sizeof buf, "nan");
    else std::snprintf(buf, sizeof buf, "%.14g", hz);
    *error = std::string("hz must be a number in (0, 100000], got ") + buf;
    return false;
  }
  *period_ns = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(1e9 / hz)));
  return true;
}

namespace {

// ---- Module state ---------------------------------------------------------------------------

// What start() uses (set by reset(), Guile's statprof-reset) and the display defaults of the
// Allegro controls. Upvalue 1 of every function.
struct ModuleState {
  SamplerSettings settings;
  ReportOptions display;  // hidden functions and packages, significance thresholds
  Profile live;           // a report made while sampling: the profile with the time so far
};

int module_state_gc(lua_State* L) {
  static_cast<ModuleState*>(lua_touserdata(L, 1))->~ModuleState();
  return 0;
}

ModuleState* module_state(lua_State* L) {
  return static_cast<ModuleState*>(lua_touserdata(L, lua_upvalueindex(1)));
}

Profile& last_profile(lua_State* L) { return attach_sampler(L)->profile(); }

// ---- Options --------------------------------------------------------------------------------

struct RunOptions {
  SamplerSettings sampler;
  lua_Integer loop = 1;
  bool display = true;
  const char* file = nullptr;  // anchored by the options table on the stack
  int table = 0;  // stack index of the options table (count_list, except_processes), or 0
};

constexpr std::uint64_t kDefaultAllocBytes = 64 * 1024;  // DESIGN.md: about 1% cost

TimerClock parse_clock(lua_State* L, int arg, const char* value) {
  if (std::strcmp(value, "cpu") == 0) return TimerClock::Cpu;
  if (std::strcmp(value, "wall") == 0) return TimerClock::Wall;
  luaL_argerror(L, arg, lua_pushfstring(L, "clock must be \"cpu\" or \"wall\", got \"%s\"", value));
  return TimerClock::Cpu;
}

void set_hz(lua_State* L, int arg, double hz, SamplerSettings* s) {
  const char* bad = nullptr;
  {
    std::string error;
    if (!parse_hz(hz, &s->period_ns, &error)) bad = lua_pushstring(L, error.c_str());
  }
  if (bad) luaL_argerror(L, arg, bad);  // the message lives on the Lua stack, error is gone
}

const char kRunOptionNames[] =
    "hz, loop, count_calls, count_list, full_stacks, clock, display, file, gc, alloc, max_samples, "
    "interpret_closures, except_processes, start_sampling";

// hz_or_options: nil, a rate in Hz, or a table of kRunOptionNames. Unknown keys are errors: a
// typo must not pass silently.
RunOptions parse_run_options(lua_State* L, int arg) {
  RunOptions o;
  arg = lua_absindex(L, arg);
  std::string error;
  set_hz(L, arg, 100.0, &o.sampler);
  switch (lua_type(L, arg)) {
    case LUA_TNONE:
    case LUA_TNIL:
      return o;
    case LUA_TNUMBER:
      set_hz(L, arg, lua_tonumber(L, arg), &o.sampler);
      return o;
    case LUA_TTABLE:
      o.table = arg;
      break;
    default:
      luaL_typeerror(L, arg, "number or table");
  }
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, arg, "option names must be strings");
    const char* key = lua_tostring(L, -2);
    auto need = [&](int type) {
      if (lua_type(L, -1) != type)
        luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a %s, got %s", key,
                                              lua_typename(L, type), luaL_typename(L, -1)));
    };
    auto list_of = [&](int type) {
      need(LUA_TTABLE);
      for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; ++i) {
        if (lua_type(L, -1) != type)
          luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a list of %ss, item %I is a %s",
                                                key, lua_typename(L, type), i, luaL_typename(L, -1)));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);  // the nil that ended the list
    };
    // The plain on/off options.
    const struct { const char* name; bool* field; } flags[] = {
        {"count_calls", &o.sampler.count_calls},       {"full_stacks", &o.sampler.full_stacks},
        {"gc", &o.sampler.gc_samples},                 {"interpret_closures", &o.sampler.interpret_closures},
        {"start_sampling", &o.sampler.start_sampling}, {"display", &o.display},
    };
    bool* flag = nullptr;
    for (const auto& f : flags)
      if (std::strcmp(key, f.name) == 0) flag = f.field;
    if (flag) {
      need(LUA_TBOOLEAN);
      *flag = lua_toboolean(L, -1);
    } else if (std::strcmp(key, "hz") == 0) {
      if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
        o.sampler.sample_time = false;  // hz=false: no time sampling (gc or space only)
      } else {
        need(LUA_TNUMBER);
        set_hz(L, arg, lua_tonumber(L, -1), &o.sampler);
      }
    } else if (std::strcmp(key, "alloc") == 0) {
      if (lua_type(L, -1) == LUA_TBOOLEAN) {
        o.sampler.alloc_bytes = lua_toboolean(L, -1) ? kDefaultAllocBytes : 0;
      } else if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
        luaL_argerror(L, arg, "option 'alloc' must be true or the mean bytes between samples (an integer >= 1)");
      } else {
        o.sampler.alloc_bytes = static_cast<std::uint64_t>(lua_tointeger(L, -1));
      }
    } else if (std::strcmp(key, "max_samples") == 0) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
        luaL_argerror(L, arg, "option 'max_samples' must be an integer >= 0 (0: no bound)");
      o.sampler.max_samples = static_cast<std::uint64_t>(lua_tointeger(L, -1));
    } else if (std::strcmp(key, "count_list") == 0) {
      list_of(LUA_TFUNCTION);
    } else if (std::strcmp(key, "except_processes") == 0) {
      list_of(LUA_TTHREAD);
    } else if (std::strcmp(key, "loop") == 0) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        luaL_argerror(L, arg, "option 'loop' must be an integer >= 1");
      o.loop = lua_tointeger(L, -1);
    } else if (std::strcmp(key, "clock") == 0) {
      need(LUA_TSTRING);
      o.sampler.clock = parse_clock(L, arg, lua_tostring(L, -1));
    } else if (std::strcmp(key, "file") == 0) {
      need(LUA_TSTRING);
      o.file = lua_tostring(L, -1);
    } else {
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s' (known: %s)", key, kRunOptionNames));
    }
    lua_pop(L, 1);
  }
  return o;
}

// ---- Output ---------------------------------------------------------------------------------

// Lua errors longjmp past C++ frames, whose objects are then never destroyed (a leak at best).
// So the functions below check their Lua arguments before they own any heap memory, and report
// later failures by pushing the message; the entry point raises once those objects are gone.

// Checks an output argument: nil (stdout), a path, or an open Lua file handle.
void check_output(lua_State* L, int arg) {
  if (lua_isnoneornil(L, arg) || lua_type(L, arg) == LUA_TSTRING) return;
  auto* stream = static_cast<luaL_Stream*>(luaL_testudata(L, arg, LUA_FILEHANDLE));
  if (!stream) luaL_typeerror(L, arg, "file name or file handle");
  if (!stream->closef) luaL_argerror(L, arg, "attempt to use a closed file");
}

// Writes report text to stdout (nil), an open Lua file handle, or a path (atomically), as
// check_output allowed. False with the message pushed when the write fails.
bool emit(lua_State* L, int arg, const std::string& text) {
  if (lua_isnoneornil(L, arg)) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  if (lua_type(L, arg) == LUA_TSTRING) {
    std::string error;
    if (write_file_atomically(lua_tostring(L, arg), text, &error)) return true;
    lua_pushstring(L, error.c_str());
    return false;
  }
  auto* stream = static_cast<luaL_Stream*>(luaL_testudata(L, arg, LUA_FILEHANDLE));
  if (std::fwrite(text.data(), 1, text.size(), stream->f) == text.size()) return true;
  lua_pushfstring(L, "cannot write the report: %s", std::strerror(errno));
  return false;
}

FlatReportOptions parse_report_options(lua_State* L, int arg) {
  FlatReportOptions o;
  if (lua_isnoneornil(L, arg)) return o;
  luaL_checktype(L, arg, LUA_TTABLE);
  if (lua_getfield(L, arg, "labels") != LUA_TNIL) {
    const char* v = luaL_checkstring(L, -1);
    if (std::strcmp(v, "guile") == 0) o.labels = LabelStyle::Guile;
    else if (std::strcmp(v, "plain") != 0) luaL_argerror(L, arg, "labels must be \"plain\" or \"guile\"");
  }
  if (lua_getfield(L, arg, "cumulative") != LUA_TNIL) {
    const char* v = luaL_checkstring(L, -1);
    if (std::strcmp(v, "guile3") == 0) o.cumulative = CumulativeMode::EveryFrame;
    else if (std::strcmp(v, "once") != 0) luaL_argerror(L, arg, "cumulative must be \"once\" or \"guile3\"");
  }
  lua_pop(L, 2);
  return o;
}

// ---- Running ----------------------------------------------------------------------------

// Starts a run; `options` (a stack index, or 0) gives the count list and the excluded processes.
void start_or_raise(lua_State* L, const SamplerSettings& settings, int options = 0) {
  LuaSampler* s = attach_sampler(L);
  if (s->active()) luaL_error(L, "the profiler is already active (call profiler.stop() first)");
  if (options) lua_getfield(L, options, "count_list");
  else lua_pushnil(L);
  s->set_count_list(L, -1);  // nil clears
  lua_pop(L, 1);
  if (options && lua_getfield(L, options, "except_processes") == LUA_TTABLE) {
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTHREAD; ++i) {
      s->set_process_profiled(L, lua_tothread(L, -1), false);
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

// The stack of a run in progress: 1 fn, 2 options, 3 the run guard (to-be-closed: an error or
// a lua_close stops the profiler and writes the report; the error passes through unchanged),
// 4 calls left, then the last call's results. A continuation, so fn may yield across it.
int run_next(lua_State* L, int, lua_KContext) {
  while (lua_tointeger(L, 4) > 0) {
    lua_settop(L, 4);
    lua_pushinteger(L, lua_tointeger(L, 4) - 1);
    lua_replace(L, 4);
    lua_pushvalue(L, 1);
    attach_sampler(L)->release_program_clock();
    lua_callk(L, 0, LUA_MULTRET, 0, run_next);
  }
  int nresults = lua_gettop(L) - 4;
  if (!run_guard_finish(L, 3)) return lua_error(L);
  return nresults;
}

// Runs fn (at 1) `o.loop` times in a fresh run with options `o` (from 2); returns its results.
// Program time is held until fn is called: a tick due while the guard is set up would
// otherwise land on fn's first instruction.
int run_profiled(lua_State* L, RunOptions o) {
  lua_settop(L, 2);
  o.sampler.hold_clock = true;
  LuaSampler* s = attach_sampler(L);
  start_fresh_or_raise(L, o);
  push_run_guard(L, s, o.display, o.file);
  lua_toclose(L, 3);
  lua_pushinteger(L, o.loop);
  return run_next(L, LUA_OK, 0);
}

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

LuaSampler* resume_or_raise(lua_State* L, bool hold_clock) {
  LuaSampler* s = attach_sampler(L);
  if (!s->active()) luaL_error(L, "the profiler is not started (call profiler.start_profiler first)");
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
  attach_sampler(L)->suspend_sampling();
  return 0;
}

int sampling_guard_close(lua_State* L) {
  attach_sampler(L)->suspend_sampling();
  return 0;
}

const char kSamplingGuardMeta[] = "scriptprof.sampling_guard";

// with_sampling's end: fn's results are above the guard at 1.
int with_sampling_done(lua_State* L, int, lua_KContext) {
  attach_sampler(L)->suspend_sampling();
  return lua_gettop(L) - 1;
}

// profiler.with_sampling(fn, ...) -> fn's results: samples only while fn runs.
int l_with_sampling(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int nargs = lua_gettop(L) - 1;
  LuaSampler* s = resume_or_raise(L, true);  // held until fn is called, as in run_profiled
  lua_newuserdatauv(L, 0, 0);
  luaL_setmetatable(L, kSamplingGuardMeta);
  lua_insert(L, 1);  // guard, fn, args...: an error in fn still suspends
  lua_toclose(L, 1);
  s->release_program_clock();
  lua_callk(L, nargs, LUA_MULTRET, 0, with_sampling_done);  // fn may yield across it
  return with_sampling_done(L, LUA_OK, 0);
}

// profiler.status() -> "inactive" | "suspended" | "sampling" | "saved" | "analyzed"
int l_status(lua_State* L) {
  static const char* const names[] = {"inactive", "suspended", "sampling", "saved", "analyzed"};
  lua_pushstring(L, names[static_cast<int>(attach_sampler(L)->status())]);
  return 1;
}

// profiler.profile_process_p(thread [, flag]) -> flag: whether a coroutine (or the main
// thread) is profiled; setting false excludes it (Allegro's mp:profile-process-p).
int l_profile_process_p(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  LuaSampler* s = attach_sampler(L);
  lua_State* thread = lua_tothread(L, 1);
  if (!lua_isnone(L, 2)) s->set_process_profiled(L, thread, lua_toboolean(L, 2));
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
  if (attach_sampler(L)->active()) luaL_error(L, "cannot reset while the profiler is active");
  SamplerSettings& st = module_state(L)->settings;
  st.period_ns = static_cast<std::uint64_t>(std::llround(period * 1e9));
  st.count_calls = lua_toboolean(L, 3);
  st.full_stacks = lua_toboolean(L, 4);
  if (!lua_isnoneornil(L, 5)) st.clock = parse_clock(L, 5, luaL_checkstring(L, 5));
  attach_sampler(L)->reset();
  return 0;
}

int l_start(lua_State* L) {
  start_or_raise(L, module_state(L)->settings);
  return 0;
}

int l_stop(lua_State* L) {
  attach_sampler(L)->stop();
  return 0;
}

int l_active(lua_State* L) {
  lua_pushboolean(L, attach_sampler(L)->active());
  return 1;
}

int l_accumulated_time(lua_State* L) {
  lua_pushnumber(L, attach_sampler(L)->accumulated_seconds());
  return 1;
}

int l_sample_count(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(last_profile(L).sample_count()));
  return 1;
}

// ---- Call data and stats --------------------------------------------------------------------

// t[key] = n for the table at `table` (an index before the push): counts are unsigned in the
// core, integers in Lua.
void set_count(lua_State* L, int table, const char* key, std::uint64_t n) {
  table = lua_absindex(L, table);
  lua_pushinteger(L, static_cast<lua_Integer>(n));
  lua_setfield(L, table, key);
}

void push_call_data(lua_State* L, const Profile& p, const CallStats& s) {
  lua_createtable(L, 0, 5);
  lua_pushstring(L, p.functions.label(s.function).c_str());
  lua_setfield(L, -2, "name");
  if (s.calls) lua_pushinteger(L, static_cast<lua_Integer>(*s.calls));
  else lua_pushnil(L);
  lua_setfield(L, -2, "calls");
  set_count(L, -1, "cum_samples", s.cum_samples);
  set_count(L, -1, "self_samples", s.self_samples);
  set_count(L, -1, "function_id", s.function);
}

// The function a call-data table stands for, checked against the current profile.
FunctionId checked_function(lua_State* L, int arg) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_getfield(L, arg, "function_id");
  lua_getfield(L, arg, "name");
  const Profile& p = last_profile(L);
  lua_Integer id = lua_tointeger(L, -2);
  const char* name = lua_tostring(L, -1);
  if (!lua_isinteger(L, -2) || id < 0 || static_cast<std::size_t>(id) >= p.functions.size() || !name ||
      p.functions.label(static_cast<FunctionId>(id)) != name)
    luaL_argerror(L, arg, "call data of another profile (was the profiler reset?)");
  lua_pop(L, 2);
  return static_cast<FunctionId>(id);
}

int l_fold_call_data(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 2);
  const Profile& p = last_profile(L);
  for (const CallStats& s : compute_call_stats(p)) {
    lua_pushvalue(L, 1);
    push_call_data(L, p, s);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    lua_replace(L, 2);
  }
  return 1;
}

int l_proc_call_data(lua_State* L) {
  luaL_checkany(L, 1);
  FunctionId f;
  LuaSampler* s = attach_sampler(L);
  if (!s->find_function_value(L, 1, &f)) {
    lua_pushnil(L);
    return 1;
  }
  push_call_data(L, s->profile(), function_stats(s->profile(), f));
  return 1;
}

int field_of_call_data(lua_State* L, const char* field) {
  checked_function(L, 1);
  lua_getfield(L, 1, field);
  return 1;
}
int l_call_data_name(lua_State* L) { return field_of_call_data(L, "name"); }
int l_call_data_calls(lua_State* L) { return field_of_call_data(L, "calls"); }
int l_call_data_cum_samples(lua_State* L) { return field_of_call_data(L, "cum_samples"); }
int l_call_data_self_samples(lua_State* L) { return field_of_call_data(L, "self_samples"); }

int l_call_data_stats(lua_State* L) {
  FunctionId f = checked_function(L, 1);
  const Profile& p = last_profile(L);
  CallStats s = function_stats(p, f);
  lua_createtable(L, 0, 7);
  lua_pushstring(L, p.functions.label(f).c_str());
  lua_setfield(L, -2, "proc_name");
  lua_pushnumber(L, s.pct_time);
  lua_setfield(L, -2, "pct_time_in_proc");
  lua_pushnumber(L, s.cum_secs);
  lua_setfield(L, -2, "cum_secs_in_proc");
  lua_pushnumber(L, s.self_secs);
  lua_setfield(L, -2, "self_secs_in_proc");
  if (s.calls) lua_pushinteger(L, static_cast<lua_Integer>(*s.calls));
  else lua_pushnil(L);
  lua_setfield(L, -2, "calls");
  if (s.self_secs_per_call) lua_pushnumber(L, *s.self_secs_per_call);
  else lua_pushnil(L);
  lua_setfield(L, -2, "self_secs_per_call");
  lua_pushnumber(L, s.cum_secs_per_call);
  lua_setfield(L, -2, "cum_secs_per_call");
  return 1;
}

int stats_field(lua_State* L, const char* field) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, field);
  return 1;
}
int l_stats_proc_name(lua_State* L) { return stats_field(L, "proc_name"); }
int l_stats_pct_time_in_proc(lua_State* L) { return stats_field(L, "pct_time_in_proc"); }
int l_stats_cum_secs_in_proc(lua_State* L) { return stats_field(L, "cum_secs_in_proc"); }
int l_stats_self_secs_in_proc(lua_State* L) { return stats_field(L, "self_secs_in_proc"); }
int l_stats_calls(lua_State* L) { return stats_field(L, "calls"); }
int l_stats_self_secs_per_call(lua_State* L) { return stats_field(L, "self_secs_per_call"); }
int l_stats_cum_secs_per_call(lua_State* L) { return stats_field(L, "cum_secs_per_call"); }

// ---- Display and raw data ---------------------------------------------------------------------

// A saved profile object as the first argument picks the profile to show; otherwise it is the
// last run's (which is then "analyzed"). Returns the index of the next argument.
int profile_argument(lua_State* L, const Profile** p) {
  if (const Profile* saved = test_profile_object(L, 1)) {
    *p = saved;
    return 2;
  }
  LuaSampler* s = attach_sampler(L);
  s->mark_analyzed();
  *p = &s->profile();
  if (s->sampling()) {
    // The profile's time is added when sampling stops: a report now shows the time so far.
    Profile& live = module_state(L)->live;
    live = s->profile();
    live.total_seconds = s->accumulated_seconds();
    *p = &live;
  }
  return 1;
}

// profiler.display([profile,] [file [, {labels="plain"|"guile", cumulative="once"|"guile3"}]])
int l_display(lua_State* L) {
  const Profile* p;
  int a = profile_argument(L, &p);
  FlatReportOptions o = parse_report_options(L, a + 1);
  check_output(L, a);
  if (!emit(L, a, statprof_flat_report(*p, o))) return lua_error(L);  // the text is gone by now
  return 0;
}

// profiler.fetch_stacks() -> { {leaf, ..., root, weight = ticks}, ... } in sample order.
int l_fetch_stacks(lua_State* L) {
  const Profile* saved;
  profile_argument(L, &saved);
  const Profile& p = *saved;
  if (!p.keep_samples)
    luaL_error(L, "no stacks were kept: profile with full_stacks=true "
                  "(or profiler.reset(secs, usecs, count_calls, true))");
  lua_createtable(L, static_cast<int>(std::min<std::size_t>(p.samples.size(), INT32_MAX)), 0);
  lua_Integer i = 0;
  for (const SampleRecord& r : p.samples) {
    std::vector<FunctionId> frames = p.tree.stack(r.leaf);
    lua_createtable(L, static_cast<int>(frames.size()), 1);
    lua_Integer j = 0;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      lua_pushstring(L, p.functions.label(*it).c_str());
      lua_rawseti(L, -2, ++j);
    }
    set_count(L, -1, "weight", r.weight);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

// profiler.fetch_call_tree() -> {total = N, tree, ...}, tree = {name=, count=, self=, child, ...};
// children by count, descending (ties by label). Built without recursion: stacks can be 100k frames deep.
int l_fetch_call_tree(lua_State* L) {
  const Profile* saved;
  profile_argument(L, &saved);
  const Profile& p = *saved;
  const CallTree& t = p.tree;
  lua_createtable(L, 0, 1);
  int result = lua_gettop(L);
  set_count(L, result, "total", p.sample_weight());
  lua_createtable(L, static_cast<int>(std::min<std::size_t>(t.size(), INT32_MAX)), 0);
  int tables = lua_gettop(L);  // node id + 1 -> the table standing for it
  bool thread_level = t.roots().size() > 1;
  std::vector<NodeId> todo;
  for (auto it = t.roots().rbegin(); it != t.roots().rend(); ++it) todo.push_back(it->second);
  while (!todo.empty()) {
    NodeId n = todo.back();
    todo.pop_back();
    const CallTreeNode& node = t.node(n);
    int parent_table = result;
    if (node.parent != kNoNode) {
      lua_rawgeti(L, tables, static_cast<lua_Integer>(node.parent) + 1);
      parent_table = lua_gettop(L);
    }
    if (node.function != kNoFunction || thread_level) {
      lua_createtable(L, 0, 3);
      std::string name = node.function != kNoFunction ? p.functions.label(node.function)
                                                      : thread_label(p, n);
      lua_pushstring(L, name.c_str());
      lua_setfield(L, -2, "name");
      set_count(L, -1, "count", node.count);
      set_count(L, -1, "self", node.self);
      lua_pushvalue(L, -1);
      lua_rawseti(L, tables, static_cast<lua_Integer>(n) + 1);
      lua_rawseti(L, parent_table, static_cast<lua_Integer>(luaL_len(L, parent_table)) + 1);
    } else {
      lua_pushvalue(L, result);  // a single process: its functions hang off the result itself
      lua_rawseti(L, tables, static_cast<lua_Integer>(n) + 1);
    }
    lua_settop(L, tables);
    std::vector<NodeId> children = children_by_count(p, n);
    for (auto it = children.rbegin(); it != children.rend(); ++it) todo.push_back(*it);
  }
  lua_settop(L, result);
  return 1;
}

// {labels=, cumulative=, hidden={names...}, significance_threshold=, fractional_significance_threshold=,
// slowest=} With `o` null, only checks (and raises on a bad option, before any C++ object holds memory);
// with `o`, reads options already checked, and cannot raise.
void read_style_options(lua_State* L, int arg, ReportOptions* o) {
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    auto fraction = [&](double* out) {
      double v = lua_tonumber(L, -1);
      if (!o && (!lua_isnumber(L, -1) || std::isnan(v) || v < 0 || v > 1))
        luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a fraction between 0 and 1", key));
      if (o) *out = v;
    };
    if (std::strcmp(key, "labels") == 0 || std::strcmp(key, "cumulative") == 0) {
      // Same values as display()'s options.
      lua_createtable(L, 0, 1);
      lua_pushvalue(L, -2);
      lua_setfield(L, -2, key);
      FlatReportOptions f = parse_report_options(L, lua_gettop(L));
      if (o && key[0] == 'l') o->flat.labels = f.labels;
      else if (o) o->flat.cumulative = f.cumulative;
      lua_pop(L, 1);
    } else if (std::strcmp(key, "significance_threshold") == 0) {
      fraction(o ? &o->allegro.significance_threshold : nullptr);
    } else if (std::strcmp(key, "fractional_significance_threshold") == 0) {
      fraction(o ? &o->allegro.fractional_significance_threshold : nullptr);
    } else if (std::strcmp(key, "slowest") == 0) {
      lua_Integer n = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
      if (!o && (n < 1 || n > 1'000'000))
        luaL_argerror(L, arg, "option 'slowest' must be a whole number of frames from 1 to 1000000");
      if (o) o->slowest_frames = static_cast<std::size_t>(n);
    } else if (std::strcmp(key, "hidden") == 0 || std::strcmp(key, "hidden_packages") == 0) {
      const char* what = key[6] == '_' ? "a list of source or name prefixes" : "a list of function names";
      if (!lua_istable(L, -1)) luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", key, what));
      std::vector<std::string>* names = nullptr;
      if (o) {
        names = key[6] == '_' ? &o->allegro.hidden_packages : &o->allegro.hidden;
        names->clear();
      }
      for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; ++i) {
        if (!o && lua_type(L, -1) != LUA_TSTRING)
          luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", key, what));
        if (names) names->emplace_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    } else if (!o) {
      luaL_argerror(L, arg, lua_pushfstring(L,
          "unknown option '%s' (known: labels, cumulative, hidden, hidden_packages, "
          "significance_threshold, fractional_significance_threshold, slowest)", key));
    }
    lua_pop(L, 1);
  }
}

ReportOptions parse_style_options(lua_State* L, int arg) {
  if (!lua_isnoneornil(L, arg)) {
    luaL_checktype(L, arg, LUA_TTABLE);
    read_style_options(L, arg, nullptr);
  }
  ReportOptions o = module_state(L)->display;
  if (!lua_isnoneornil(L, arg)) read_style_options(L, arg, &o);
  return o;
}

// profiler.report(style [, file [, options]]): any report style of the last run (or of a
// profile read).
int l_report(lua_State* L) {
  const Profile* p;
  int a = profile_argument(L, &p);
  const char* style = luaL_checkstring(L, a);
  check_output(L, a + 1);
  const char* bad_style = nullptr;
  bool written = true;
  {
    ReportOptions options = parse_style_options(L, a + 2);  // raises only before it holds memory
    std::string text, error;
    if (!render_report(*p, style, &text, &error, options)) bad_style = lua_pushstring(L, error.c_str());
    else written = emit(L, a + 1, text);
  }
  if (bad_style) luaL_argerror(L, a, bad_style);
  if (!written) return lua_error(L);
  return 0;
}

// profiler.display_defaults(options): what every report uses unless told otherwise (hidden,
// hidden_packages, significance thresholds, labels, cumulative); reset_display_defaults()
// puts back the built-in ones (Allegro's reset-profiler-display-defaults).
int l_display_defaults(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  module_state(L)->display = parse_style_options(L, 1);
  return 0;
}

int l_reset_display_defaults(lua_State* L) {
  module_state(L)->display = ReportOptions{};
  return 0;
}

// profiler.write(path, format [, {evented=, thread_level=}]): a file of the last run, written
// atomically.
int l_write(lua_State* L) {
  const Profile* p;
  int a = profile_argument(L, &p);
  const char* path = luaL_checkstring(L, a);
  const char* format = luaL_checkstring(L, a + 1);
  FormatOptions options;
  if (!lua_isnoneornil(L, a + 2)) {
    luaL_checktype(L, a + 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, a + 2)) {
      const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
      if (std::strcmp(key, "evented") == 0) options.evented = lua_toboolean(L, -1);
      else if (std::strcmp(key, "thread_level") == 0) options.thread_level = lua_toboolean(L, -1);
      else luaL_argerror(L, a + 2, lua_pushfstring(L, "unknown option '%s' (known: evented, thread_level)", key));
      lua_pop(L, 1);
    }
  }
  const char* bad_format = nullptr;
  const char* failure = nullptr;
  {
    std::string text, error;
    if (!render_format(*p, format, &text, &error, options)) bad_format = lua_pushstring(L, error.c_str());
    else if (!write_file_atomically(path, text, &error)) failure = lua_pushstring(L, error.c_str());
  }
  if (bad_format) luaL_argerror(L, a + 1, bad_format);
  if (failure) return lua_error(L);
  return 0;
}

// profiler.read(path [, format]) -> warnings: loads a saved profile as the last run, so display,
// report and write work on it. The format is guessed from the contents when not given.
int l_read(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  const char* format = luaL_optstring(L, 2, "");
  LuaSampler* s = attach_sampler(L);
  if (s->active()) luaL_error(L, "cannot read a profile while the profiler is active");
  bool ok;
  {
    auto profile = std::make_shared<Profile>();
    std::string error;
    std::vector<std::string> warnings;
    ok = read_profile_file(path, format, profile.get(), &error, &warnings);
    if (ok) {
      s->adopt(std::move(profile));
      lua_createtable(L, static_cast<int>(warnings.size()), 0);  // may raise only on memory
      for (std::size_t i = 0; i < warnings.size(); ++i) {
        lua_pushstring(L, warnings[i].c_str());
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
      }
    } else {
      lua_pushstring(L, error.c_str());
    }
  }
  return ok ? 1 : lua_error(L);
}

// profiler.save_current_profile([kind]) -> a profile object ("time", "gc" or "space"; by
// default the run's main one) that every report and writer takes, so runs can be compared.
int l_save_current_profile(lua_State* L) {
  static const char* const kinds[] = {"time", "gc", "space", nullptr};
  LuaSampler* s = attach_sampler(L);
  if (s->active()) luaL_error(L, "stop the profiler before saving its profile");
  int k = lua_isnoneornil(L, 1) ? static_cast<int>(s->primary_kind()) : luaL_checkoption(L, 1, nullptr, kinds);
  s->mark_analyzed();
  push_profile_object(L, std::make_shared<const Profile>(s->profile(static_cast<SampleKind>(k))), kinds[k]);
  return 1;
}

// profiler.annotate(fn [, file]): fn's source with the share of the last run's samples on
// each line (the analogue of Allegro's disassemble-profile).
int l_annotate(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  check_output(L, 2);
  LuaSampler* s = attach_sampler(L);
  lua_Debug ar;
  lua_pushvalue(L, 1);
  lua_getinfo(L, ">S", &ar);
  FunctionId f;
  bool found = s->find_function_value(L, 1, &f);
  s->mark_analyzed();
  bool written;
  {
    std::string text;
    if (!found) {
      text = std::string(ar.short_src) + ":" + std::to_string(ar.linedefined) + ": not sampled in the last run\n";
    } else {
      std::vector<std::string> lines;
      std::string error;
      if (!source_lines(ar.source, &lines, &error)) text = "(" + error + ": only the sampled lines)\n";
      text += annotated_source(s->profile(), f, lines);
    }
    written = emit(L, 2, text);
  }
  return written ? 0 : lua_error(L);
}

// profiler.stats() -> {bytes=, profile_bytes=, sampler_bytes=, functions=, stacks=, samples=}:
// the memory the profiler holds now (its profiles and its own tables) and what it holds them
// for, so a long run's cost can be watched: bytes per function, per distinct stack, per sample.
int l_stats(lua_State* L) {
  LuaSampler* s = attach_sampler(L);
  std::size_t profile_bytes = 0;
  std::uint64_t samples = 0, stacks = 0;
  for (SampleKind kind : {SampleKind::Time, SampleKind::Gc, SampleKind::Space}) {
    const Profile& p = s->profile(kind);
    profile_bytes += p.bytes();
    samples += p.health.samples_taken;
    stacks += p.tree.size();
  }
  lua_createtable(L, 0, 6);
  set_count(L, -1, "bytes", profile_bytes + s->own_bytes());
  set_count(L, -1, "profile_bytes", profile_bytes);
  set_count(L, -1, "sampler_bytes", s->own_bytes());
  set_count(L, -1, "functions", s->profile().functions.size());
  set_count(L, -1, "stacks", stacks);
  set_count(L, -1, "samples", samples);
  return 1;
}

// profiler.health() -> {signals=, samples_taken=, ticks_merged=, dropped=}: what the sampler
// did for the last profile, so a user can see when ticks were merged or dropped.
int l_health(lua_State* L) {
  const SamplerHealth& h = last_profile(L).health;
  lua_createtable(L, 0, 4);
  set_count(L, -1, "signals", h.signals);
  set_count(L, -1, "samples_taken", h.samples_taken);
  set_count(L, -1, "ticks_merged", h.ticks_merged);
  set_count(L, -1, "dropped", h.dropped);
  set_count(L, -1, "excluded", h.excluded);
  set_count(L, -1, "no_room", h.no_room);
  set_count(L, -1, "counting_lifts", h.counting_lifts);
  lua_pushboolean(L, h.limit_reached);
  lua_setfield(L, -2, "max_samples_reached");
  return 1;
}

// Methods of saved profile objects: p:display(), p:report(style), p:write(path, format), ...
const luaL_Reg kProfileMethods[] = {
    {"display", l_display},
    {"report", l_report},
    {"write", l_write},
    {"fetch_stacks", l_fetch_stacks},
    {"fetch_call_tree", l_fetch_call_tree},
    {nullptr, nullptr},
};

const luaL_Reg kFunctions[] = {
    {"statprof", l_statprof},
    {"reset", l_reset},
    {"frame", l_frame},
    {"start", l_start},
    {"stop", l_stop},
    {"active", l_active},
    {"accumulated_time", l_accumulated_time},
    {"sample_count", l_sample_count},
    {"fold_call_data", l_fold_call_data},
    {"proc_call_data", l_proc_call_data},
    {"call_data_name", l_call_data_name},
    {"call_data_calls", l_call_data_calls},
    {"call_data_cum_samples", l_call_data_cum_samples},
    {"call_data_self_samples", l_call_data_self_samples},
    {"call_data_stats", l_call_data_stats},
    {"stats_proc_name", l_stats_proc_name},
    {"stats_pct_time_in_proc", l_stats_pct_time_in_proc},
    {"stats_cum_secs_in_proc", l_stats_cum_secs_in_proc},
    {"stats_self_secs_in_proc", l_stats_self_secs_in_proc},
    {"stats_calls", l_stats_calls},
    {"stats_self_secs_per_call", l_stats_self_secs_per_call},
    {"stats_cum_secs_per_call", l_stats_cum_secs_per_call},
    {"display", l_display},
    {"fetch_stacks", l_fetch_stacks},
    {"fetch_call_tree", l_fetch_call_tree},
    {"health", l_health},
    {"stats", l_stats},
    {"gcprof", l_gcprof},
    {"with_profiling", l_with_profiling},
    {"start_profiler", l_start_profiler},
    {"stop_profiler", l_stop},
    {"start_sampling", l_start_sampling},
    {"stop_sampling", l_stop_sampling},
    {"with_sampling", l_with_sampling},
    {"status", l_status},
    {"profile_process_p", l_profile_process_p},
    {"closure", l_closure},
    {"save_current_profile", l_save_current_profile},
    {"annotate", l_annotate},
    {"display_defaults", l_display_defaults},
    {"reset_display_defaults", l_reset_display_defaults},
    {"report", l_report},
    {"write", l_write},
    {"read", l_read},
    {nullptr, nullptr},
};

}  // namespace
}  // namespace scriptprof::lua

extern "C" int luaopen_profiler(lua_State* L) {
  using namespace scriptprof::lua;
  LuaSampler* sampler = attach_sampler(L);
  for (const luaL_Reg* r = kFunctions; r->name; ++r) sampler->add_own(r->func);
  sampler->add_boundary(l_statprof);  // frames below the profiled function are the caller's
  sampler->add_boundary(l_gcprof);
  sampler->add_boundary(l_with_profiling);
  sampler->add_own(run_guard_close_function());
  sampler->add_own(sampling_guard_close);
  register_run_guard(L);
  if (luaL_newmetatable(L, kSamplingGuardMeta)) {
    lua_pushcfunction(L, sampling_guard_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  luaL_newlibtable(L, kFunctions);
  auto* state = static_cast<ModuleState*>(lua_newuserdatauv(L, sizeof(ModuleState), 0));
  new (state) ModuleState{};
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, module_state_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  register_profile_object(L, kProfileMethods);  // the state on top rides along as upvalue
  luaL_setfuncs(L, kFunctions, 1);
  lua_pushliteral(L, "0.1.0");
  lua_setfield(L, -2, "version");
  return 1;
}
