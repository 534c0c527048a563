// What the embedding tests share: a Lua state with think/plan/spin, native spinning that
// allocates (under TSan a signal lands only at an allocation), profiles checked and read back
// as stacks of labels per process.
#pragma once
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <time.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scriptprof_lua.h"
#include "scriptprof/profile.hpp"
#include "scriptprof/profiler.hpp"

namespace embed_test {

// The profile behind the C handle (the tests check it through the core's vocabulary).
inline const scriptprof::Profile& core(const scriptprof_profile* p) { return scriptprof::profile_of(p); }

inline const char* kScript = R"(
  local function spin(seconds)
    local t0, t, n = os.clock(), {}, 0
    while os.clock() - t0 < seconds do
      n = n + 1
      t[n % 16] = tostring(n)   -- allocates: under TSan a signal lands only at an allocation
    end
  end
  function think(seconds) spin(seconds) end
  function plan(seconds) spin(seconds) end
  return spin
)";

inline lua_State* new_state(const char* extra = "") {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  REQUIRE(luaL_dostring(L, kScript) == LUA_OK);
  lua_pop(L, 1);
  if (*extra) REQUIRE(luaL_dostring(L, extra) == LUA_OK);
  return L;
}

inline void call_global(lua_State* L, const char* name, double seconds) {
  lua_getglobal(L, name);
  lua_pushnumber(L, seconds);
  REQUIRE(lua_pcall(L, 1, 0, 0) == LUA_OK);
}

inline void spin_native(double seconds) {
  timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  std::vector<std::string> junk;
  do {
    junk.emplace_back(64, 'x');  // allocates (see the TSan note above)
    if (junk.size() > 64) junk.clear();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while (static_cast<double>(t.tv_sec - t0.tv_sec) + static_cast<double>(t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
}

inline scriptprof_profiler* new_profiler(double hz, bool full_stacks = false, std::uint64_t max_samples = 100000) {
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = hz;
  o.full_stacks = full_stacks;
  o.max_samples = max_samples;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  return p;
}

// Attaches L and starts it on the calling thread.
inline void attach_and_start(scriptprof_profiler* p, lua_State* L) {
  REQUIRE(scriptprof_attach(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_start(p, L) == SCRIPTPROF_OK);
}

// Every thread's profile merged (all stopped), its invariants checked.
inline scriptprof_profile* take_checked(scriptprof_profiler* p) {
  scriptprof_profile* prof = nullptr;
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(scriptprof::check_invariants(core(prof)).empty());
  return prof;
}

inline std::vector<std::string> labels(const scriptprof::Profile& p, const std::vector<scriptprof::FunctionId>& stack) {
  std::vector<std::string> out;
  for (auto f : stack) out.push_back(p.functions.label(f));
  return out;
}

// Weight per root-first stack of labels, per process.
inline std::map<std::uint32_t, std::map<std::vector<std::string>, std::uint64_t>> stacks(const scriptprof::Profile& p) {
  std::map<std::uint32_t, std::map<std::vector<std::string>, std::uint64_t>> out;
  scriptprof::for_each_sample_path(p, [&](std::uint32_t thread, scriptprof::NodeId, const scriptprof::CallTreeNode& node,
                                          const std::vector<scriptprof::FunctionId>& stack) {
    out[thread][labels(p, stack)] += node.self;
  });
  return out;
}

inline bool contains(const std::vector<std::string>& stack, const std::string& prefix) {
  for (const auto& f : stack)
    if (f.rfind(prefix, 0) == 0) return true;
  return false;
}

// The weight of every sample with a frame whose label starts with `prefix`, over all processes.
inline std::uint64_t weight_under(const scriptprof::Profile& p, const std::string& prefix) {
  std::uint64_t weight = 0;
  for (const auto& [process, by_stack] : stacks(p))
    for (const auto& [stack, w] : by_stack)
      if (contains(stack, prefix)) weight += w;
  return weight;
}


}  // namespace embed_test
