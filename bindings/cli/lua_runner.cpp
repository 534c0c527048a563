#include "lua_runner.hpp"

#include "lua_source_text.hpp"

extern "C" {
#include <lauxlib.h>
#ifdef SCRIPTPROF_LUAJIT
#include <luajit.h>  // this build is luajitprof's, or the LuaJIT module's
#endif
}
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef LUA_OK
#define LUA_OK 0
#endif

namespace luarunner {

const char* g_progname = "lua";
void (*g_before_call)() = nullptr;
int g_runner_levels = 0;

namespace {

// Drops the runner's levels (but the last, the interpreter's own) from the traceback on top.
void drop_runner_levels(lua_State* L) {
  std::size_t size = 0;
  const char* text = lua_tolstring(L, -1, &size);
  if (g_runner_levels < 2 || text == nullptr) return;
  const std::string t(text, size);
  const std::size_t last = t.rfind('\n');
  std::size_t cut = last;
  for (int i = 1; i < g_runner_levels && cut != std::string::npos && cut > 0; ++i) cut = t.rfind('\n', cut - 1);
  if (last == std::string::npos || cut == std::string::npos) return;
  lua_pushstring(L, (t.substr(0, cut) + t.substr(last)).c_str());
  lua_remove(L, -2);
}

lua_State* g_interrupt_state = nullptr;

void interrupt_hook(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  luaL_error(L, "interrupted!");
}

// SIGINT: lua.c's behaviour (raise "interrupted!" in the script), so Ctrl-C still prints the
// report. Async-signal-safe: signal() and lua_sethook (documented as signal-safe) only.
void on_sigint(int sig) {
  signal(sig, SIG_DFL);
  lua_sethook(g_interrupt_state, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

int message_handler(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (msg == nullptr) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
#if LUA_VERSION_NUM == 501 && !defined(SCRIPTPROF_LUAJIT)
  // PUC 5.1 has no luaL_traceback: its lua.c asks debug.traceback, as here.
  lua_getglobal(L, "debug");
  if (lua_istable(L, -1)) lua_getfield(L, -1, "traceback");
  if (!lua_isfunction(L, -1)) {
    lua_pushstring(L, msg);  // no traceback: the message alone
    return 1;
  }
  lua_pushstring(L, msg);
  lua_pushinteger(L, 2);
  lua_call(L, 2, 1);
#else
  luaL_traceback(L, L, msg, 1);
#endif
  drop_runner_levels(L);
  return 1;
}

#ifdef LUAJIT_VERSION
// luajit.c's -j: "-jcmd=a,b" calls jit.cmd(a, b) when jit has it (on, off, flush), else
// require("jit.cmd").start(a, b); -O: require("jit.opt").start(opts...).
int jit_command(lua_State* L, const std::string& module, const std::string& command) {
  std::string name = command, args;
  std::size_t eq = command.find('=');
  if (eq != std::string::npos) {
    name = command.substr(0, eq);
    args = command.substr(eq + 1);
  }
  lua_getglobal(L, "jit");
  lua_getfield(L, -1, name.c_str());
  lua_remove(L, -2);
  const bool builtin = module.empty() && lua_isfunction(L, -1);  // jit.on, jit.off, jit.flush
  if (!builtin) {
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushstring(L, (module.empty() ? "jit." + name : module).c_str());
    int status = docall(L, 1, 1);
    if (status != LUA_OK) return report_status(L, status);
    lua_getfield(L, -1, "start");
    lua_remove(L, -2);
    if (!module.empty()) args = command;
  }
  int n = 0;
  for (std::size_t at = 0; !args.empty() && at <= args.size(); ++n) {
    std::size_t comma = args.find(',', at);
    if (comma == std::string::npos) comma = args.size();
    lua_pushstring(L, args.substr(at, comma - at).c_str());
    at = comma + 1;
  }
  return report_status(L, docall(L, n, 0));
}
#endif

}  // namespace

int docall(lua_State* L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, message_handler);
  lua_insert(L, base);
  g_interrupt_state = L;
  signal(SIGINT, on_sigint);
  if (g_before_call) g_before_call();
  int status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

void print_message(const char* msg) {
  std::fprintf(stderr, "%s: %s\n", g_progname, msg);
  std::fflush(stderr);
}

int report_status(lua_State* L, int status) {
  if (status != LUA_OK) {
    const char* msg = lua_tostring(L, -1);
    print_message(msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

int run_chunk(lua_State* L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report_status(L, status);
}

int handle_luainit(lua_State* L) {
  const char* name = "=LUA_INIT";
  const char* init = nullptr;
#ifdef LUA_VERSION_MAJOR
  name = "=LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
  init = std::getenv(name + 1);
  if (init == nullptr) name = "=LUA_INIT";
#endif
  if (init == nullptr) init = std::getenv(name + 1);
  if (init == nullptr) return LUA_OK;
  if (init[0] == '@') return run_chunk(L, luaL_loadfile(L, init + 1));
  return run_chunk(L, luaL_loadbuffer(L, init, std::strlen(init), name));
}

int run_lua_arg(lua_State* L, char kind, const std::string& value) {
  if (kind == 'W') {
#if LUA_VERSION_NUM >= 504
    lua_warning(L, "@on", 0);
    return LUA_OK;
#else
    print_message("'-W': this Lua has no warnings (Lua 5.4 and later have)");
    return LUA_ERRRUN;
#endif
  }
#ifdef LUAJIT_VERSION
  if (kind == 'j') return jit_command(L, "", value);
  if (kind == 'O') return jit_command(L, "jit.opt", value);
#endif
  if (kind == 'e') return run_chunk(L, luaL_loadbuffer(L, value.data(), value.size(), "=(command line)"));
  // "g=mod" requires mod into global g.
  std::size_t eq = value.find('=');
  std::string global = eq == std::string::npos ? value : value.substr(0, eq);
  std::string module = eq == std::string::npos ? value : value.substr(eq + 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, module.c_str());
  int status = docall(L, 1, 1);
  if (status == LUA_OK) lua_setglobal(L, global.c_str());
  return report_status(L, status);
}

void set_arg_table(lua_State* L, int argc, char** argv, int script) {
  lua_createtable(L, argc - script - 1, script + 1);
  for (int i = 0; i < argc; ++i) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

bool run_lua_args(lua_State* L, const luaprof::Options& o) {
  for (const luaprof::Options::LuaArg& arg : o.lua_args)
    if (run_lua_arg(L, arg.kind, arg.value) != LUA_OK) return false;
  return true;
}

int run_script(lua_State* L, int argc, char** argv, int script) {
  const char* fname = argv[script];
  if (std::strcmp(fname, "-") == 0 && std::strcmp(argv[script - 1], "--") != 0) fname = nullptr;
  int status = luaL_loadfile(L, fname);
  if (status != LUA_OK) return status;
  const int n = argc - script - 1;
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (int i = 1; i <= n; ++i) lua_pushstring(L, argv[script + i]);
  return docall(L, n, LUA_MULTRET);
}

std::vector<std::string> annotate_lines(const std::vector<std::string>& sources, const scriptprof::Profile& p,
                                        scriptprof::FunctionId f) {
  std::string source = f < sources.size() ? sources[f] : "";
  if (source.empty()) source = "@" + p.functions.info(f).file;
  std::vector<std::string> lines;
  std::string error;
  scriptprof::lua::source_lines(source, &lines, &error);
  return lines;
}

}  // namespace luarunner
