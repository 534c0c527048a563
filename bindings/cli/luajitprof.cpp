// build/bin/luajitprof: runs a script as luajit does, with the JIT on, under the LuaJIT
// adapter, and prints the report (like `luajit -jp`, with our reports and files).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
#include <lualib.h>
}

#include "command_serving.hpp"
#include "exit_status.hpp"
#include "lua_runner.hpp"
#include "luajit_sampler.hpp"
#include "luaprof_options.hpp"
#include "report_output.hpp"

namespace {

using luaprof::Options;
using scriptprof::luajit::LuaJitSampler;

struct Run {
  const Options* options = nullptr;
  std::unique_ptr<LuaJitSampler> sampler;
  luaprof::RunProfiles profiles;
  bool reported = false;
  bool tool_failed = false;
};
Run g_run;  // one run per process; atexit needs it (os.exit skips main's epilogue)
luaprof::CommandServing g_serving;  // --serve: stopped before the sampler stops or goes

// Stops the profiler and prints the reports, once (from main, or from atexit after os.exit).
void finish_report() {
  if (g_run.reported || g_run.profiles.empty()) return;
  g_run.reported = true;
  g_serving.stop();
  if (g_run.sampler) g_run.sampler->stop();
  if (!g_run.options->serve.empty()) return;  // its profiles went to its clients
  std::fflush(stdout);
  // LuaJIT keeps no chunk text: a function's file is read again.
  auto lines = [](const scriptprof::Profile& p, scriptprof::FunctionId f) { return luarunner::annotate_lines({}, p, f); };
  if (!luaprof::write_reports(*g_run.options, luarunner::g_progname, g_run.profiles, lines))
    g_run.tool_failed = true;
}

// After the script's os.exit: the reports, and when they fail, the status that says so in
// place of the script's.
void finish_report_at_exit() {
  finish_report();
  if (g_run.tool_failed) {
    std::fflush(nullptr);
    std::_Exit(cli::kToolFailed);
  }
}

void release_program_clock() {
  if (g_run.sampler) g_run.sampler->engine().release_clock();
}

struct MainArgs {
  int argc;
  char** argv;
};

// As luajit.c's pmain, in protected mode.
int protected_main(lua_State* L) {
  auto* a = static_cast<MainArgs*>(lua_touserdata(L, 1));
  const Options& o = *g_run.options;
  const bool has_script = o.script < a->argc;
  const int script = has_script ? o.script : 0;
  if (o.no_env) {
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  lua_gc(L, LUA_GCSTOP, 0);  // as luajit.c: stop the collector while the libraries open
  luaL_openlibs(L);
  lua_gc(L, LUA_GCRESTART, -1);
  luarunner::set_arg_table(L, a->argc, a->argv, script);
  if (!o.no_env && luarunner::handle_luainit(L) != 0) return 0;

  g_run.sampler = std::make_unique<LuaJitSampler>(L);
  g_run.sampler->add_boundary(protected_main);
  scriptprof::RunSettings settings = o.run;
  settings.hold_clock = true;  // released by docall: setting up is not the script's time
  std::string error;
  if (!g_run.sampler->start(L, settings, &error)) {
    g_run.sampler.reset();
    g_run.tool_failed = true;
    return luaL_error(L, "cannot start the profiler: %s", error.c_str());
  }
  g_run.profiles = luaprof::run_profiles(g_run.sampler->engine(), has_script ? a->argv[script] : "(command line)");
  if (!g_serving.start(g_run.sampler->engine(), o, has_script ? a->argv[script] : "(command line)", LUAJIT_VERSION,
                       luarunner::g_progname, &error)) {
    g_run.tool_failed = true;
    g_run.sampler->stop();
    return luaL_error(L, "cannot serve profiles: %s", error.c_str());
  }
  if (!luarunner::run_lua_args(L, o)) {
    g_serving.stop();
    g_run.sampler->stop();
    return 0;
  }
  const int status = has_script ? luarunner::run_script(L, a->argc, a->argv, script) : 0;
  g_serving.stop();
  g_run.sampler->stop();
  if (luarunner::report_status(L, status) != 0) return 0;
  lua_pushboolean(L, 1);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  luarunner::g_progname = argc > 0 && argv[0] && argv[0][0] ? argv[0] : "luajitprof";
  luarunner::g_before_call = release_program_clock;
  static Options options;  // atexit reads it after main returns
  luaprof::Frontend fe;
  fe.program = "luajitprof";
  fe.interpreter = "luajit";
  fe.version = LUAJIT_VERSION;
  fe.jit_options = true;
  options = luaprof::parse_options(argc, argv, fe);
  g_run.options = &options;
  lua_State* L = luaL_newstate();
  if (L == nullptr) {
    luarunner::print_message("cannot create state: not enough memory");
    return cli::kToolFailed;
  }
  std::atexit(finish_report_at_exit);
  MainArgs args{argc, argv};
  lua_pushcfunction(L, protected_main);
  lua_pushlightuserdata(L, &args);
  const int status = lua_pcall(L, 1, 1, 0);
  const int ok = lua_toboolean(L, -1);
  luarunner::report_status(L, status);
  finish_report();
  g_run.sampler.reset();
  lua_close(L);
  return g_run.tool_failed ? cli::kToolFailed : (ok && status == 0) ? cli::kOk : cli::kFailed;
}
