// What the files of the Lua module `profiler` share: its state, its option types and parsers,
// its output, and the Lua functions each file defines (registered in profiler_module.cpp).
// Internal to bindings/lua.
#pragma once
#include <cstdint>
#include <string>

extern "C" {
#include <lua.h>
}

#include "module_sampler.hpp"
#include "scriptprof/run_options.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/statprof_flat_report.hpp"
#ifdef SCRIPTPROF_HTTP
#include "scriptprof/profile_server.hpp"
#endif

namespace scriptprof::lua::module {

// What start() uses (set by reset(), Guile's statprof-reset) and the display defaults of the
// Allegro controls. Upvalue 1 of every function.
struct ModuleState {
  SamplerSettings settings;
  ReportOptions display;  // hidden functions and packages, significance thresholds
  Profile live;           // a report made while sampling: the profile with the time so far
#ifdef SCRIPTPROF_HTTP
  ServedEngine served;    // profiler.serve's: stopped before the sampler goes (its __gc runs first)
#endif
};

inline ModuleState* module_state(lua_State* L) {
  return static_cast<ModuleState*>(lua_touserdata(L, lua_upvalueindex(1)));
}
inline Profile& last_profile(lua_State* L) { return attach_sampler(L)->engine().profile(); }

// ---- Options (module_options.cpp) ----
struct RunOptions {
  SamplerSettings sampler;
  lua_Integer loop = 1;
  bool display = true;
  const char* file = nullptr;  // anchored by the options table on the stack
  int table = 0;  // stack index of the options table (count_list, except_processes), or 0
};
// Sets run option `name` (run_options.hpp) from the Lua value at `value`; raises a Lua error
// on argument `arg` naming the option ("option 'hz' must be ...", or "hz must be ..." for a
// positional argument).
void set_run_option(lua_State* L, int arg, RunSettings* settings, const char* name, int value, bool positional);
// hz_or_options at `arg`: nil, a rate in Hz, or a table of options; unknown keys raise.
RunOptions parse_run_options(lua_State* L, int arg);
// The flat display's {labels=, cumulative=}.
FlatReportOptions parse_report_options(lua_State* L, int arg);
// The report styles' options over the display defaults; raises only before it holds memory.
ReportOptions parse_style_options(lua_State* L, int arg);

// ---- Output (module_output.cpp) ----
// Lua errors longjmp past C++ frames: arguments are checked before any heap memory is owned,
// and later failures push their message for the entry point to raise.
void check_output(lua_State* L, int arg);
bool emit(lua_State* L, int arg, const std::string& text);

// ---- Shared by the files below ----
// t[key] = n for the table at `table` (an index before the push).
void set_count(lua_State* L, int table, const char* key, std::uint64_t n);
// A saved profile object as the first argument, else the last run's; the next argument's index.
int profile_argument(lua_State* L, const Profile** p);

inline constexpr char kSamplingGuardMeta[] = "scriptprof.sampling_guard";
int sampling_guard_close(lua_State* L);

// ---- The module's functions ----
// module_run_control.cpp
int l_statprof(lua_State* L);
int l_gcprof(lua_State* L);
int l_with_profiling(lua_State* L);
int l_start_profiler(lua_State* L);
int l_start_sampling(lua_State* L);
int l_stop_sampling(lua_State* L);
int l_with_sampling(lua_State* L);
int l_status(lua_State* L);
int l_profile_process_p(lua_State* L);
int l_closure(lua_State* L);
int l_frame(lua_State* L);
int l_reset(lua_State* L);
int l_start(lua_State* L);
int l_stop(lua_State* L);
int l_active(lua_State* L);
int l_accumulated_time(lua_State* L);
int l_sample_count(lua_State* L);
// module_call_data.cpp
int l_fold_call_data(lua_State* L);
int l_proc_call_data(lua_State* L);
int l_call_data_name(lua_State* L);
int l_call_data_calls(lua_State* L);
int l_call_data_cum_samples(lua_State* L);
int l_call_data_self_samples(lua_State* L);
int l_call_data_compiled_samples(lua_State* L);
int l_call_data_stats(lua_State* L);
int l_stats_proc_name(lua_State* L);
int l_stats_pct_time_in_proc(lua_State* L);
int l_stats_cum_secs_in_proc(lua_State* L);
int l_stats_self_secs_in_proc(lua_State* L);
int l_stats_calls(lua_State* L);
int l_stats_self_secs_per_call(lua_State* L);
int l_stats_cum_secs_per_call(lua_State* L);
int l_stats(lua_State* L);
int l_health(lua_State* L);
// module_reports.cpp
int l_display(lua_State* L);
int l_fetch_stacks(lua_State* L);
int l_fetch_call_tree(lua_State* L);
int l_report(lua_State* L);
int l_display_defaults(lua_State* L);
int l_reset_display_defaults(lua_State* L);
int l_write(lua_State* L);
int l_read(lua_State* L);
int l_save_current_profile(lua_State* L);
int l_annotate(lua_State* L);
// module_luaprof.cpp
int l_luaprof(lua_State* L);
// module_run_control.cpp: a new run (fresh profiles) as `o` says, or a Lua error why not.
void start_fresh_or_raise(lua_State* L, const RunOptions& o);
// module_serve.cpp
int l_serve(lua_State* L);
int l_stop_serving(lua_State* L);
// Ends serving and the served run, if on (profiler.stop and stop_serving).
void stop_serving(lua_State* L);

}  // namespace scriptprof::lua::module
