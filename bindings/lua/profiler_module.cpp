// The Lua module `profiler`: Guile statprof's API in Lua spelling, on the last run. This file
// registers it; its functions live by concept in module_run_control.cpp, module_call_data.cpp
// and module_reports.cpp, their options in module_options.cpp and module_output.cpp.
#include "profiler_module.hpp"

#include <string>

extern "C" {
#include <lauxlib.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string>

#include "module_internal.hpp"
#include "profile_object.hpp"
#include "run_guard.hpp"
#include "scriptprof/version.hpp"
#ifndef SCRIPTPROF_LUAJIT
#include "lua_release.hpp"
#endif

namespace scriptprof::lua {

namespace module {

int module_state_gc(lua_State* L) {
  static_cast<ModuleState*>(lua_touserdata(L, 1))->~ModuleState();
  return 0;
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
    {"luaprof", l_luaprof},
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
    {"call_data_compiled_samples", l_call_data_compiled_samples},
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
    {"serve", l_serve},
    {"stop_serving", l_stop_serving},
    {nullptr, nullptr},
};

}  // namespace module
}  // namespace scriptprof::lua

extern "C" int luaopen_profiler(lua_State* L) {
#ifndef SCRIPTPROF_LUAJIT
  // Another Lua gets this far (the module's references to Lua are weak) and is told which
  // module it needs, rather than "undefined symbol" or a crash.
  if (std::string mismatch = scriptprof::lua::release_mismatch(L); !mismatch.empty()) {
    lua_pushstring(L, mismatch.c_str());
    return lua_error(L);
  }
#endif
  using namespace scriptprof::lua;
  using namespace scriptprof::lua::module;
  ModuleSampler* sampler = attach_sampler(L);
  for (const luaL_Reg* r = kFunctions; r->name; ++r) sampler->add_own(r->func);
  sampler->add_boundary(l_statprof);  // frames below the profiled function are the caller's
  sampler->add_boundary(l_gcprof);
  sampler->add_boundary(l_with_profiling);
  sampler->add_boundary(l_luaprof);
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
  lua_pushliteral(L, SCRIPTPROF_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
