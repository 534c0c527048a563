// profiler.luaprof(argv): luaprof's command line run inside the interpreter that loaded the
// module, so that any Lua (5.1 to 5.5, LuaJIT, a host's own build) runs a script as luaprof
// does: the same options, `arg`, error messages, reports and files. `luaprof --lua PATH` runs
// PATH with a one-line chunk that calls it.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <lauxlib.h>
#ifdef SCRIPTPROF_LUAJIT
#include <luajit.h>
#endif
}

#include "command_serving.hpp"
#include "exit_status.hpp"
#include "lua_runner.hpp"
#include "luaprof_options.hpp"
#include "module_internal.hpp"
#include "report_output.hpp"

namespace scriptprof::lua::module {
namespace {

// The one command run (a command line, as luaprof's process has one): held here, not on the
// C stack, because a Lua error or the script's os.exit leaves l_luaprof's frame by longjmp or
// exit.
struct CommandRun {
  std::vector<std::string> args;
  std::vector<char*> argv;
  luaprof::Options options;
  ModuleSampler* sampler = nullptr;
  luaprof::RunProfiles profiles;
  std::vector<std::string> sources;  // per function id: the chunk's source (annotate)
  bool running = false;
  bool tool_failed = false;
};
CommandRun g_command;
luaprof::CommandServing g_serving;  // --serve: stopped before the sampler stops

// Stops the run and prints its reports, once: at the script's end, or before its os.exit.
void finish_command() {
  if (!g_command.running) return;
  g_command.running = false;
  const luaprof::Options& o = g_command.options;
  g_serving.stop();
  g_command.sampler->stop();
  if (!o.serve.empty()) return;  // its profiles went to its clients
  if (!o.annotate.empty()) g_command.sources = luarunner::kept_sources(*g_command.sampler, *g_command.profiles[0].second);
  std::fflush(stdout);
  auto lines = [](const Profile& p, FunctionId f) { return luarunner::annotate_lines(g_command.sources, p, f); };
  if (!luaprof::write_reports(o, luarunner::g_progname, g_command.profiles, lines))
    g_command.tool_failed = true;
}

void release_program_clock() {
  if (g_command.running) g_command.sampler->engine().release_clock();
}

// The script's os.exit: the reports first (the real os.exit is upvalue 1), and when they fail,
// the status that says so in place of the script's.
int exit_after_reports(lua_State* L) {
  finish_command();
  if (g_command.tool_failed) {
    lua_settop(L, 0);
    lua_pushinteger(L, cli::kToolFailed);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// Puts `exit_after_reports` in os.exit (put_back false), or the real os.exit back.
void wrap_os_exit(lua_State* L, bool put_back) {
  lua_getglobal(L, "os");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, -1, "exit");
  if (put_back) {
    if (lua_tocfunction(L, -1) == exit_after_reports && lua_getupvalue(L, -1, 1)) lua_setfield(L, -3, "exit");
  } else if (lua_isfunction(L, -1)) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, exit_after_reports, 1);
    lua_setfield(L, -3, "exit");
  }
  lua_pop(L, 2);
}

}  // namespace

int l_luaprof(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const int n = static_cast<int>(luaL_len(L, 1));
  for (int i = 0; i <= n; ++i) {  // checked before any C++ memory is held
    lua_rawgeti(L, 1, i);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, 1, lua_pushfstring(L, "argv[%d] must be a string, got %s", i, luaL_typename(L, -1)));
    lua_pop(L, 1);
  }
  ModuleSampler* sampler = attach_sampler(L);
  if (g_command.running || sampler->engine().active())
    luaL_error(L, "profiler.luaprof: the profiler is already active (call profiler.stop() first)");
  bool start_failed = false;
  int script = 0;
  {
    g_command = CommandRun{};
    for (int i = 0; i <= n; ++i) {
      lua_rawgeti(L, 1, i);
      g_command.args.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
    for (std::string& a : g_command.args) g_command.argv.push_back(a.data());
    g_command.argv.push_back(nullptr);
    luarunner::g_progname = g_command.argv[0][0] ? g_command.argv[0] : "luaprof";
    luarunner::g_before_call = release_program_clock;
    lua_Debug level;
    luarunner::g_runner_levels = 0;
    while (lua_getstack(L, luarunner::g_runner_levels, &level)) ++luarunner::g_runner_levels;
    // A bad command line ends the process as luaprof's does (the usage error, cli::kUsage).
    luaprof::Frontend frontend;  // luaprof's, run by the interpreter that loaded the module
    frontend.other_lua = true;
#ifdef SCRIPTPROF_LUAJIT
    frontend.interpreter = "luajit";
    frontend.version = LUAJIT_VERSION;
    frontend.jit_options = true;
#else
    frontend.interpreter = "lua";
    frontend.version = LUA_RELEASE;
#endif
    g_command.options = luaprof::parse_options(n + 1, g_command.argv.data(), frontend);
    const luaprof::Options& o = g_command.options;
    const bool has_script = o.script <= n;
    script = has_script ? o.script : 0;
    SamplerSettings settings;
    static_cast<RunSettings&>(settings) = o.run;
    settings.keep_chunk_text = o.keep_chunk_text;
    settings.hold_clock = true;  // released by docall: setting up is not the script's time
    std::string error;
    if (!sampler->start(L, settings, &error)) {
      luarunner::print_message(("cannot start the profiler: " + error).c_str());
      start_failed = true;
    } else {
      g_command.sampler = sampler;
      g_command.running = true;
      g_command.profiles = luaprof::run_profiles(sampler->engine(), has_script ? g_command.argv[script] : "(command line)");
#ifdef SCRIPTPROF_LUAJIT
      const char* runtime = LUAJIT_VERSION;
#else
      const char* runtime = LUA_RELEASE;
#endif
      if (!g_serving.start(sampler->engine(), o, has_script ? g_command.argv[script] : "(command line)", runtime,
                           luarunner::g_progname, &error)) {
        luarunner::print_message(("cannot serve profiles: " + error).c_str());
        g_command.running = false;
        sampler->stop();
        start_failed = true;
      }
    }
  }
  if (start_failed) {
    lua_pushinteger(L, cli::kToolFailed);
    return 1;
  }
  luarunner::set_arg_table(L, n + 1, g_command.argv.data(), script);
  wrap_os_exit(L, false);
  int status = 0;
  if (luarunner::run_lua_args(L, g_command.options)) {
    if (script) status = luarunner::report_status(L, luarunner::run_script(L, n + 1, g_command.argv.data(), script));
  } else {
    status = 1;
  }
  finish_command();
  wrap_os_exit(L, true);
  lua_pushinteger(L, g_command.tool_failed ? cli::kToolFailed : status == 0 ? cli::kOk : cli::kFailed);
  return 1;
}

}  // namespace scriptprof::lua::module
