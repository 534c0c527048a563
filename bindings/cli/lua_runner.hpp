// What lua.c (and luajit.c) do around a script, kept identical so that a script cannot tell it
// runs under a profiler: error messages with a traceback, Ctrl-C as "interrupted!", LUA_INIT,
// -e, -l, -W and LuaJIT's -j and -O. Lua 5.1's API only: compiled into luaprof (Lua 5.4) and
// into luajitprof (LuaJIT): one source, two builds.
#pragma once
extern "C" {
#include <lua.h>
}
#include <string>
#include <vector>

#include "luaprof_options.hpp"

namespace luarunner {

// The program name that prefixes messages (argv[0], as lua.c).
extern const char* g_progname;
// Called just before each chunk runs: where the profiled program's time starts.
extern void (*g_before_call)();
// Levels at the bottom of the stack that are the runner's, not the program's (the module's
// profiler.luaprof, the chunk that called it, the interpreter's main): a traceback shows only
// the last, as under lua.c. 0 or 1: nothing to hide.
extern int g_runner_levels;

// lua.c's docall: runs the function below `narg` arguments with a traceback handler.
int docall(lua_State* L, int narg, int nres);
void print_message(const char* msg);
// Prints the error on top of the stack, if status says there is one; returns status.
int report_status(lua_State* L, int status);
int run_chunk(lua_State* L, int status);
// LUA_INIT_5_4 (Lua 5.4 only), else LUA_INIT: code or @file run before the script.
int handle_luainit(lua_State* L);
// One interpreter option before the script: 'e' (-e stat), 'l' (-l mod, or g=mod), 'W' (-W,
// Lua 5.4), 'j' (-j cmd[=args], LuaJIT), 'O' (-O[opt], LuaJIT).
int run_lua_arg(lua_State* L, char kind, const std::string& value);

// What a runner does after its own set-up, shared by luaprof, luajitprof and the module's
// profiler.luaprof: the global `arg` (the script at 0, its arguments at 1.., the program and
// its options below 0; without a script the options are arg[1..], as lua.c has them), ...
void set_arg_table(lua_State* L, int argc, char** argv, int script);
// ... the interpreter's options in order (false after the first that failed: its error is
// printed), ...
bool run_lua_args(lua_State* L, const luaprof::Options& o);
// ... and the script argv[script] (standard input for "-", unless after "--") with the rest of
// argv as its arguments. The status; an error's message is left on the stack for report_status.
int run_script(lua_State* L, int argc, char** argv, int script);

// --annotate's sources, kept before the sampler goes with its state: per function id of `p`, the
// chunk's source the sampler kept (Sampler::source_of), else "".
template <class Sampler>
std::vector<std::string> kept_sources(const Sampler& sampler, const scriptprof::Profile& p) {
  std::vector<std::string> sources;
  for (scriptprof::FunctionId f = 0; f < p.functions.size(); ++f) {
    const std::string* src = sampler.source_of(f);
    sources.push_back(src ? *src : "");
  }
  return sources;
}
// The source lines of function f for --annotate: its kept source, else its file read again
// (empty when neither can be read).
std::vector<std::string> annotate_lines(const std::vector<std::string>& sources, const scriptprof::Profile& p,
                                        scriptprof::FunctionId f);

}  // namespace luarunner
