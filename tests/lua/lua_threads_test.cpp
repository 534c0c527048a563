// Several OS threads, each running its own lua_State under the `profiler` module, profiled at
// once. Every timer aims its signal at its own thread (SIGEV_THREAD_ID): a sample taken on
// the wrong thread would show another thread's functions, or walk a state that is running.
// Built and run under ThreadSanitizer too (SCRIPTPROF_TSAN). The work allocates: TSan delivers
// a signal only when the thread next enters its runtime (malloc does), never inside a plain
// uninstrumented loop such as the Lua VM's.
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <string>
#include <thread>
#include <vector>

#include "lua_attach.hpp"
#include "profiler_module.hpp"

using namespace scriptprof;
using namespace scriptprof::lua;

namespace {

struct ThreadResult {
  std::string error;
  std::uint64_t samples = 0;
  std::uint64_t own = 0;      // samples whose leaf is this thread's work function
  std::uint64_t foreign = 0;  // samples of another thread's work function
  std::string invariants;
};

// One thread: its own state, the module, three statprof runs of its own work function.
void profile_in_thread(int index, int threads, ThreadResult* out) {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "profiler", luaopen_profiler, 0);
  lua_pop(L, 1);
  std::string name = "work_" + std::to_string(index);
  std::string code = "local profiler = require 'profiler'\n"
                     "function " + name + "(n) local x = 0 for i = 1, n do x = x + #{i, i} end return x end\n"
                     "for run = 1, 3 do\n"
                     "  profiler.statprof(function() for r = 1, 10 do " + name + "(1e5) end end,\n"
                     "                    {hz = 2000, count_calls = run == 2, alloc = run == 3 and 4096 or nil, display = false})\n"
                     "end\n";
  if (luaL_dostring(L, code.c_str()) != LUA_OK) {
    out->error = lua_tostring(L, -1);
  } else {
    const Profile& p = attach_sampler(L)->engine().profile();
    out->samples = p.sample_weight();
    for (FunctionId f = 0; f < p.functions.size(); ++f) {
      const std::string& label = p.functions.label(f);
      for (int other = 0; other < threads; ++other) {
        std::string other_name = "work_" + std::to_string(other) + " ";
        if (label.rfind(other_name, 0) != 0) continue;
        (other == index ? out->own : out->foreign) += p.counts(f).self;
      }
    }
    out->invariants = check_invariants(p);
  }
  lua_close(L);
}

}  // namespace

TEST_CASE("several states on several threads are profiled at once and keep their own samples") {
  constexpr int kThreads = 3;
  std::vector<ThreadResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(profile_in_thread, i, kThreads, &results[i]);
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    INFO("thread " << i);
    CHECK(results[i].error.empty());
    CHECK(results[i].invariants.empty());
    CHECK(results[i].samples > 0);
    CHECK(results[i].own > 0);
    CHECK(results[i].foreign == 0);
  }
}

TEST_CASE("threads starting and stopping profilers over and over do not disturb each other") {
  constexpr int kThreads = 4;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([i, &errors] {
      lua_State* L = luaL_newstate();
      luaL_openlibs(L);
      luaL_requiref(L, "profiler", luaopen_profiler, 0);
      lua_pop(L, 1);
      const char* code =
          "local profiler = require 'profiler'\n"
          "for i = 1, 200 do\n"
          "  profiler.start_profiler{hz = 10000}\n"
          "  local x = 0 for j = 1, 2000 do x = x + j end\n"
          "  profiler.stop_profiler()\n"
          "end\n";
      if (luaL_dostring(L, code) != LUA_OK) errors[i] = lua_tostring(L, -1);
      lua_close(L);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) CHECK(errors[i].empty());
}
