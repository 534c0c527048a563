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

#include "lua_attach.hpp"
#include "luaprof_options.hpp"
#include "lua_source_text.hpp"
#include "profiler_module.hpp"
#include "scriptprof/annotated_source.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/statprof_flat_report.hpp"

using luaprof::Options;
using luaprof::parse_options;
using scriptprof::lua::LuaSampler;

namespace {

// As lua.c: messages are prefixed with the program's own argv[0].
const char* g_progname = "luaprof";


struct Run {
  const Options* options = nullptr;
  lua_State* L = nullptr;
  LuaSampler* sampler = nullptr;
  // The run's profiles (time, gc, space: those asked for), held here because os.exit(code, true)
  // closes the state, and the sampler with it, before the report is printed.
  std::vector<std::pair<scriptprof::lua::SampleKind, std::shared_ptr<scriptprof::Profile>>> profiles;
  std::vector<std::string> sources;  // per function id: the chunk's source name (annotate)
  bool reported = false;
};
Run g_run;  // one run per process; atexit needs it (os.exit skips main's epilogue)


// The source lines of function `f` for --annotate (empty when they cannot be read).
std::vector<std::string> annotate_source(const scriptprof::Profile& p, scriptprof::FunctionId f) {
  std::string source = f < g_run.sources.size() ? g_run.sources[f] : "";
  if (source.empty()) source = "@" + p.functions.info(f).file;
  std::vector<std::string> lines;
  std::string error;
  scriptprof::lua::source_lines(source, &lines, &error);
  return lines;
}

// Stops the profiler (if the state still runs) and prints the reports, once: one per profile
// asked for, each saying what its numbers mean when there are several.
void finish_report() {
  if (g_run.reported || g_run.profiles.empty()) return;
  g_run.reported = true;
  const Options& o = *g_run.options;
  if (g_run.sampler) {
    g_run.sampler->stop();
    for (scriptprof::FunctionId f = 0; !o.annotate.empty() && f < g_run.profiles[0].second->functions.size(); ++f) {
      const std::string* src = g_run.sampler->source_of(f);
      g_run.sources.push_back(src ? *src : "");
    }
  }
  std::fflush(stdout);
  std::string text, error;
  static const char* const titles[] = {"time", "garbage collections (a sample after each)",
                                       "space (bytes allocated)"};
  for (const auto& [kind, profile] : g_run.profiles) {
    std::string one;
    if (!scriptprof::render_report(*profile, o.style, &one, &error, o.report)) one = error + "\n";
    if (g_run.profiles.size() > 1) text += "== " + std::string(titles[static_cast<int>(kind)]) + " ==\n";
    text += one;
    for (const std::string& name : o.annotate)
      for (scriptprof::FunctionId f = 0; f < profile->functions.size(); ++f)
        if (profile->counts(f).cumulative > 0 &&
            (profile->functions.info(f).name == name || profile->functions.label(f) == name))
          text += "\n" + scriptprof::annotated_source(*profile, f, annotate_source(*profile, f));
  }
  if (!o.output.empty()) {
    std::string file;
    if (!scriptprof::render_format(*g_run.profiles[0].second, o.format, &file, &error) ||
        !scriptprof::write_file_atomically(o.output, file, &error))
      std::fprintf(stderr, "luaprof: %s\n", error.c_str());
  }
  if (o.report_file.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    if (!scriptprof::write_file_atomically(o.report_file, text, &error))
      std::fprintf(stderr, "luaprof: %s\n", error.c_str());
  }
}

// ---- What lua.c does, kept identical so scripts cannot tell the difference -----------------

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
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int docall(lua_State* L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, message_handler);
  lua_insert(L, base);
  g_interrupt_state = L;
  signal(SIGINT, on_sigint);
  if (g_run.sampler) g_run.sampler->release_program_clock();  // the script's time starts here
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

// LUA_INIT_5_4, else LUA_INIT: code (or @file) run before the script, as lua.c does.
int handle_luainit(lua_State* L) {
  const char* name = "=LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
  const char* init = std::getenv(name + 1);
  if (init == nullptr) {
    name = "=LUA_INIT";
    init = std::getenv(name + 1);
  }
  if (init == nullptr) return LUA_OK;
  if (init[0] == '@') return run_chunk(L, luaL_loadfile(L, init + 1));
  return run_chunk(L, luaL_loadbuffer(L, init, std::strlen(init), name));
}

// os.exit(code, true) closes the state before atexit runs: forget the sampler then (the
// state frees it, stopping it and completing the profile, which we still hold).
int forget_sampler(lua_State*) {
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

// -e and -l, as lua.c's dostring and dolibrary.
int run_lua_arg(lua_State* L, const Options::LuaArg& a) {
  if (a.kind == 'W') {
    lua_warning(L, "@on", 0);
    return LUA_OK;
  }
  if (a.kind == 'e') return run_chunk(L, luaL_loadbuffer(L, a.value.data(), a.value.size(), "=(command line)"));
  // "g=mod" requires mod into global g.
  std::size_t eq = a.value.find('=');
  std::string global = eq == std::string::npos ? a.value : a.value.substr(0, eq);
  std::string module = eq == std::string::npos ? a.value : a.value.substr(eq + 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, module.c_str());
  int status = docall(L, 1, 1);
  if (status == LUA_OK) lua_setglobal(L, global.c_str());
  return report_status(L, status);
}

// Runs in protected mode, as lua.c's pmain does (so tracebacks end in "[C]: in ?").
int protected_main(lua_State* L) {
  auto* a = static_cast<MainArgs*>(lua_touserdata(L, 1));
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
  // The arg table: the script at 0, its arguments at 1.., luaprof and its options below 0.
  lua_createtable(L, a->argc - script - 1, script + 1);
  for (int i = 0; i < a->argc; ++i) {
    lua_pushstring(L, a->argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
  lua_gc(L, LUA_GCGEN, 0, 0);  // as lua.c
  if (!o.no_env && handle_luainit(L) != LUA_OK) return 0;

  // The profiler runs from the first -e/-l to the script's end: what luaprof was asked to run.
  {
    g_run.sampler = scriptprof::lua::attach_sampler(L);
    g_run.sampler->add_boundary(protected_main);
    watch_state_close(L);
    std::string error;
    scriptprof::lua::SamplerSettings settings = a->options->sampler;
    settings.hold_clock = true;  // released by docall: setting up is not the script's time
    if (!g_run.sampler->start(L, settings, &error))
      return luaL_error(L, "cannot start the profiler: %s", error.c_str());
    using scriptprof::lua::SampleKind;
    const auto& st = a->options->sampler;
    for (SampleKind k : {SampleKind::Time, SampleKind::Gc, SampleKind::Space})
      if ((k == SampleKind::Time && g_run.sampler->primary_kind() == SampleKind::Time) ||
          (k == SampleKind::Gc && st.gc_samples) || (k == SampleKind::Space && st.alloc_bytes)) {
        g_run.profiles.emplace_back(k, g_run.sampler->shared_profile(k));
        g_run.profiles.back().second->name = has_script ? a->argv[script] : "(command line)";
      }
  }
  for (const Options::LuaArg& arg : o.lua_args) {
    if (run_lua_arg(L, arg) != LUA_OK) {
      g_run.sampler->stop();
      return 0;
    }
  }
  int status = LUA_OK;
  if (has_script) {
    const char* fname = a->argv[script];
    if (std::strcmp(fname, "-") == 0 && std::strcmp(a->argv[script - 1], "--") != 0) fname = nullptr;
    status = luaL_loadfile(L, fname);
    if (status == LUA_OK) {
      int n = a->argc - script - 1;
      luaL_checkstack(L, n + 3, "too many arguments to script");
      for (int i = 1; i <= n; ++i) lua_pushstring(L, a->argv[script + i]);
      status = docall(L, n, LUA_MULTRET);
    }
  }
  g_run.sampler->stop();
  if (report_status(L, status) != LUA_OK) return 0;
  lua_pushboolean(L, 1);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0 && argv[0] && argv[0][0]) g_progname = argv[0];
  static Options options;  // atexit reads it after main returns
  options = parse_options(argc, argv);
  g_run.options = &options;
  lua_State* L = luaL_newstate();
  if (L == nullptr) {
    print_message("cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  g_run.L = L;
  std::atexit(finish_report);  // os.exit() leaves through exit(): the report still comes out
  MainArgs args{argc, argv, &options};
  lua_pushcfunction(L, protected_main);
  lua_pushlightuserdata(L, &args);
  int status = lua_pcall(L, 1, 1, 0);
  int ok = lua_toboolean(L, -1);
  report_status(L, status);
  finish_report();
  g_run.sampler = nullptr;
  lua_close(L);
  return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
