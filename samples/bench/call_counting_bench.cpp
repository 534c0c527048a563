// build/bin/scriptprof_call_counting_bench [--quick]: what exact call counting costs per call,
// beside its floor. Lua's call hook itself costs something on every call; counting cannot cost
// less. One process, interleaved rounds, medians of thread CPU time, on two workloads: a
// recursive fib (every operation a call) and a loop calling a few small functions in turn
// (the pair cache misses).
//   plain            no hook
//   bare call hook   an empty C function as LUA_MASKCALL hook: the floor
//   count_calls      the profiler with count_calls (scriptprof_lua.h), sampling at 100 Hz
//                    (the C API always samples time; 100 Hz costs under 1%)
// `--single plain|bare|count` runs fib(25) once in that mode and prints nothing else: for an
// instruction count that this machine's noise cannot move,
//   valgrind --tool=callgrind build/bin/scriptprof_call_counting_bench --single count
// less the same with `--single bare`, over fib(25)'s 242,785 calls, is what counting adds per call.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "quick_flag.hpp"
#include "scriptprof_lua.h"

namespace {

const char* kWorkloads[][2] = {
    {"recursive fib", "local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end\n"
                      "return function(scale) return fib(25 + scale) end"},
    {"calls in turn", "local function a(x) return x + 1 end local function b(x) return x * 2 end\n"
                      "local function c(x) return x - 3 end\n"
                      "return function(scale) local s = 0 for i = 1, 20000 * 2 ^ scale do\n"
                      "  s = a(s) s = b(s) % 1000 s = c(s) end return s end"},
};

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void bare_hook(lua_State*, lua_Debug*) {}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One timed call of the workload's function (left on the stack by the caller).
double run_once(lua_State* L, int scale) {
  lua_pushvalue(L, -1);
  lua_pushinteger(L, scale);
  const double t0 = thread_seconds();
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    std::fprintf(stderr, "workload failed: %s\n", lua_tostring(L, -1));
    std::exit(1);
  }
  return thread_seconds() - t0;
}

// A workload's state, its function on the stack, and a profiler counting calls attached to
// it (sampling at 100 Hz, as the C API always samples time); false, said on stderr, if not.
bool set_up(const char* const workload[2], lua_State** state, scriptprof_profiler** profiler) {
  lua_State* L = *state = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_loadstring(L, workload[1]) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    std::fprintf(stderr, "%s: %s\n", workload[0], lua_tostring(L, -1));
    return false;
  }
  scriptprof_options options;
  scriptprof_options_init(&options);
  options.count_calls = 1;
  options.hz = 100;
  if (scriptprof_create(&options, profiler) != SCRIPTPROF_OK || scriptprof_attach(*profiler, L) != SCRIPTPROF_OK) {
    std::fprintf(stderr, "scriptprof: %s\n", scriptprof_error());
    return false;
  }
  return true;
}

bool start(scriptprof_profiler* p, lua_State* L) {
  if (scriptprof_start(p, L) == SCRIPTPROF_OK) return true;
  std::fprintf(stderr, "scriptprof_start: %s\n", scriptprof_error());
  return false;
}

// The first workload (fib(25)) under one mode, once (for valgrind): 0 on success.
int run_single(const std::string& mode) {
  lua_State* L = nullptr;
  scriptprof_profiler* p = nullptr;
  if (!set_up(kWorkloads[0], &L, &p)) return 1;
  if (mode == "bare") lua_sethook(L, bare_hook, LUA_MASKCALL, 0);
  if (mode == "count" && !start(p, L)) return 1;
  run_once(L, 0);
  if (mode == "count") scriptprof_stop(p, L);
  scriptprof_destroy(p);
  lua_close(L);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"exact call counting beside the bare call hook"};
  bool quick = false;
  add_quick_flag(app, &quick);
  std::string single;
  app.add_option("--single", single, "run fib(25) once in this mode, for valgrind")
      ->check(CLI::IsMember({"plain", "bare", "count"}));
  parse_or_exit(app, argc, argv);
  if (!single.empty()) return run_single(single);
  const int rounds = quick ? 1 : 7, scale = quick ? 5 : 7;
  std::printf("== exact call counting beside the bare call hook (Lua 5.4), medians of %d interleaved rounds\n", rounds);
  std::printf("%-16s %10s %16s %14s %20s\n", "workload", "plain s", "bare hook x", "counting x", "counting / floor");
  for (const auto& w : kWorkloads) {
    lua_State* L = nullptr;
    scriptprof_profiler* p = nullptr;
    if (!set_up(w, &L, &p)) return 1;
    std::vector<double> plain, bare, counted;
    run_once(L, scale);  // warm up
    for (int r = 0; r < rounds; ++r) {
      plain.push_back(run_once(L, scale));
      lua_sethook(L, bare_hook, LUA_MASKCALL, 0);
      bare.push_back(run_once(L, scale));
      lua_sethook(L, nullptr, 0, 0);
      if (!start(p, L)) return 1;
      counted.push_back(run_once(L, scale));
      scriptprof_stop(p, L);
    }
    const double base = median(plain), b = median(bare) / base, c = median(counted) / base;
    std::printf("%-16s %10.3f %16.3f %14.3f %19.3fx\n", w[0], base, b, c, c / b);
    scriptprof_destroy(p);
    lua_close(L);
  }
  return 0;
}
