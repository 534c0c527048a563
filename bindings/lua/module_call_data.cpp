// Call data and statistics (statprof's fold-call-data, proc-call-data and accessors), the
// profiler's health and its memory.
#include "module_internal.hpp"

#include <string>

extern "C" {
#include <lauxlib.h>
}

#include "scriptprof/call_stats.hpp"

namespace scriptprof::lua::module {

// t[key] = n for the table at `table` (an index before the push): counts are unsigned in the
// core, integers in Lua.
void set_count(lua_State* L, int table, const char* key, std::uint64_t n) {
  table = lua_absindex(L, table);
  lua_pushinteger(L, static_cast<lua_Integer>(n));
  lua_setfield(L, table, key);
}

void push_call_data(lua_State* L, const Profile& p, const CallStats& s) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, p.functions.label(s.function).c_str());
  lua_setfield(L, -2, "name");
  if (s.calls) lua_pushinteger(L, static_cast<lua_Integer>(*s.calls));
  else lua_pushnil(L);
  lua_setfield(L, -2, "calls");
  set_count(L, -1, "cum_samples", s.cum_samples);
  set_count(L, -1, "self_samples", s.self_samples);
  set_count(L, -1, "function_id", s.function);
  // Self samples that ran JIT-compiled code: only a runtime with a JIT (LuaJIT) tells, and only
  // of script code ((gc), (jit) and C functions never run compiled script).
  if (p.jit_shares && can_run_compiled(p.functions.info(s.function)))
    set_count(L, -1, "compiled_samples", p.counts(s.function).compiled);
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
  ModuleSampler* s = attach_sampler(L);
  if (!s->find_function_value(L, 1, &f)) {
    lua_pushnil(L);
    return 1;
  }
  push_call_data(L, s->engine().profile(), function_stats(s->engine().profile(), f));
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
int l_call_data_compiled_samples(lua_State* L) { return field_of_call_data(L, "compiled_samples"); }

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


// profiler.stats() -> {bytes=, profile_bytes=, sampler_bytes=, functions=, stacks=, samples=}:
// the memory the profiler holds now (its profiles and its own tables) and what it holds them
// for, so a long run's cost can be watched: bytes per function, per distinct stack, per sample.
int l_stats(lua_State* L) {
  ModuleSampler* s = attach_sampler(L);
  std::size_t profile_bytes = 0;
  std::uint64_t samples = 0, stacks = 0;
  for (SampleKind kind : {SampleKind::Time, SampleKind::Gc, SampleKind::Space}) {
    const Profile& p = s->engine().profile(kind);
    profile_bytes += p.bytes();
    samples += p.health.samples_taken;
    stacks += p.tree.size();
  }
  lua_createtable(L, 0, 6);
  set_count(L, -1, "bytes", profile_bytes + s->own_bytes());
  set_count(L, -1, "profile_bytes", profile_bytes);
  set_count(L, -1, "sampler_bytes", s->own_bytes());
  set_count(L, -1, "functions", s->engine().profile().functions.size());
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
  set_count(L, -1, "off_cpu", h.off_cpu);
  if (!h.internals.empty()) {
    lua_pushstring(L, h.internals.c_str());
    lua_setfield(L, -2, "internals");  // the interpreter layout verified, or "public API only"
  }
  if (!h.timer.empty()) {
    lua_pushstring(L, h.timer.c_str());
    lua_setfield(L, -2, "timer");  // how ticks reached the thread
  }
  if (h.signal_lost_at >= 0) {
    // The program took the timer's signal: no sample after this many seconds.
    lua_pushnumber(L, h.signal_lost_at);
    lua_setfield(L, -2, "signal_handler_lost_at");
    lua_pushstring(L, h.signal_name.c_str());
    lua_setfield(L, -2, "signal");
  }
  return 1;
}

}  // namespace scriptprof::lua::module
