// luaprof: runs a Lua script the way lua5.4 does (same `arg`, exit status and error messages)
// under the sampling profiler, and prints the flat report when the script ends.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "command_serving.hpp"
#include "exit_status.hpp"
#include "lua_attach.hpp"
#include "lua_runner.hpp"
#include "luaprof_options.hpp"
#include "other_lua.hpp"
#include "profiler_module.hpp"
#include "report_output.hpp"

using luaprof::Options;
using luaprof::parse_options;
using scriptprof::lua::LuaSampler;

namespace {


struct Run {
  const Options* options = nullptr;
  lua_State* L = nullptr;
  LuaSampler* sampler = nullptr;
  // The run's profiles (time, gc, space: those asked for), held here because os.exit(code, true)
  // closes the state, and the sampler with it, before the report is printed.
  luaprof::RunProfiles profiles;
  std::vector<std::string> sources;  // per function id: the chunk's source name (annotate)
  bool reported = false;
  bool tool_failed = false;  // the profiler could not start, or a report or file could not be
                             // made or written: the exit status says so
};
Run g_run;  // one run per process; atexit needs it (os.exit skips main's epilogue)
luaprof::CommandServing g_serving;  // --serve: stopped before the sampler stops or goes

void stop_serving() { g_serving.stop(); }


// Stops the profiler (if the state still runs) and prints the reports, once: one per profile
// asked for, each saying what its numbers mean when there are several.
void finish_report() {
  if (g_run.reported || g_run.profiles.empty()) return;
  g_run.reported = true;
  const Options& o = *g_run.options;
  stop_serving();
  if (!o.serve.empty()) {  // its profiles went to its clients
    if (g_run.sampler) g_run.sampler->stop();
    return;
  }
  if (g_run.sampler) {
    g_run.sampler->stop();
    if (!o.annotate.empty()) g_run.sources = luarunner::kept_sources(*g_run.sampler, *g_run.profiles[0].second);
  }
  std::fflush(stdout);
  auto lines = [](const scriptprof::Profile& p, scriptprof::FunctionId f) {
    return luarunner::annotate_lines(g_run.sources, p, f);
  };
  if (!luaprof::write_reports(o, luarunner::g_progname, g_run.profiles, lines)) g_run.tool_failed = true;
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

// os.exit(code, true) closes the state before atexit runs: forget the sampler then (the
// state frees it, stopping it and completing the profile, which we still hold).
int forget_sampler(lua_State*) {
  stop_serving();
  g_run.sampler = nullptr;
  return 0;
}

void watch_state_close(lua_State* L) {
  lua_newuserdatauv(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, forget_sampler);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &g_run);
}

struct MainArgs {
  int argc;
  char** argv;
  const Options* options;
};

// Runs in protected mode, as lua.c's pmain does (so tracebacks end in "[C]: in ?"), with its
// two arguments: the script then starts on the same stack slot as under lua5.4, and a runaway
// recursion overflows at the same depth.
int protected_main(lua_State* L) {
  auto* a = static_cast<MainArgs*>(lua_touserdata(L, 2));
  const Options& o = *a->options;
  const bool has_script = o.script < a->argc;
  // As lua.c: without a script, the options are arg[1..] and arg[0] is the program.
  int script = has_script ? o.script : 0;
  luaL_checkversion(L);
  if (o.no_env) {
    lua_pushboolean(L, 1);  // as lua.c: package skips LUA_PATH and LUA_CPATH
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  // `require "profiler"` inside the script gets this very profiler, not a second copy.
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_profiler);
  lua_setfield(L, -2, "profiler");
  lua_pop(L, 1);
  luarunner::set_arg_table(L, a->argc, a->argv, script);
  lua_gc(L, LUA_GCGEN, 0, 0);  // as lua.c
  if (!o.no_env && luarunner::handle_luainit(L) != LUA_OK) return 0;

  // The profiler runs from the first -e/-l to the script's end: what luaprof was asked to run.
  {
    g_run.sampler = scriptprof::lua::attach_sampler(L);
    g_run.sampler->add_boundary(protected_main);
    watch_state_close(L);
    std::string error;
    scriptprof::lua::SamplerSettings settings;
    static_cast<scriptprof::RunSettings&>(settings) = a->options->run;
    settings.keep_chunk_text = a->options->keep_chunk_text;
    settings.hold_clock = true;  // released by docall: setting up is not the script's time
    if (!g_run.sampler->start(L, settings, &error)) {
      g_run.tool_failed = true;
      return luaL_error(L, "cannot start the profiler: %s", error.c_str());
    }
    g_run.profiles = luaprof::run_profiles(g_run.sampler->engine(), has_script ? a->argv[script] : "(command line)");
    if (!g_serving.start(g_run.sampler->engine(), o, has_script ? a->argv[script] : "(command line)", LUA_RELEASE,
                         luarunner::g_progname, &error)) {
      g_run.tool_failed = true;
      g_run.sampler->stop();
      return luaL_error(L, "cannot serve profiles: %s", error.c_str());
    }
  }
  if (!luarunner::run_lua_args(L, o)) {
    stop_serving();
    g_run.sampler->stop();
    return 0;
  }
  const int status = has_script ? luarunner::run_script(L, a->argc, a->argv, script) : LUA_OK;
  stop_serving();
  g_run.sampler->stop();
  if (luarunner::report_status(L, status) != LUA_OK) return 0;
  lua_pushboolean(L, 1);
  return 1;
}

}  // namespace

static void release_program_clock() {
  if (g_run.sampler) g_run.sampler->engine().release_clock();  // the script's time starts here
}

int main(int argc, char** argv) {
  luarunner::g_progname = argc > 0 && argv[0] && argv[0][0] ? argv[0] : "luaprof";
  luarunner::g_before_call = release_program_clock;
  static Options options;  // atexit reads it after main returns
  luaprof::Frontend fe;  // luaprof, standing in for lua5.4
  fe.version = LUA_RELEASE;
  fe.other_lua = true;
  options = parse_options(argc, argv, fe);
  if (!options.other_lua.empty()) return luaprof::exec_other_lua(options.other_lua, argc, argv, options.no_env);
  g_run.options = &options;
  lua_State* L = luaL_newstate();
  if (L == nullptr) {
    luarunner::print_message("cannot create state: not enough memory");
    return cli::kToolFailed;
  }
  g_run.L = L;
  std::atexit(finish_report_at_exit);  // os.exit() leaves through exit(): the report still comes out
  MainArgs args{argc, argv, &options};
  lua_pushcfunction(L, protected_main);
  lua_pushinteger(L, argc);  // as lua.c: argc, then argv
  lua_pushlightuserdata(L, &args);
  int status = lua_pcall(L, 2, 1, 0);
  int ok = lua_toboolean(L, -1);
  luarunner::report_status(L, status);
  finish_report();
  g_run.sampler = nullptr;
  lua_close(L);
  return g_run.tool_failed ? cli::kToolFailed : (ok && status == LUA_OK) ? cli::kOk : cli::kFailed;
}
