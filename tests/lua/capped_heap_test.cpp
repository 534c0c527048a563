// A host that caps its Lua heap at what its program needs runs the same with the profiler
// attached, in every mode: the Lua objects the profiler makes live in its allocator tap's
// arena, outside the host's heap (runtimes/lua/allocator_tap.hpp). Also run under valgrind
// (memcheck.capped_heap), which sees the arena's blocks as heap blocks.
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <string>

#include "counting_allocator.hpp"
#include "lua_attach.hpp"
#include "lua_sampler.hpp"
#include "profiler_module.hpp"

using namespace scriptprof;
using namespace scriptprof::lua;

namespace {

// Tables, strings, closures, recursion, coroutines made, wrapped and closed, and the debug
// library's hooks: each reaches a part of the profiler that makes Lua objects.
const char kProgram[] = R"(
  local t = {} for i = 1, 200 do t[i % 50 + 1] = tostring(i) end
  local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end
  local s = 0 for i = 1, 3000 do s = s + f(20) end
  local co = coroutine.wrap(function() for i = 1, 10 do coroutine.yield(i) end end)
  for i = 1, 10 do s = s + co() end
  local c = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
  local _, x = coroutine.resume(c, 1)
  local _, y = coroutine.resume(c, x)
  local d = coroutine.create(function() coroutine.yield() end)
  coroutine.resume(d) coroutine.close(d)
  debug.sethook(function() end, "", 1000)
  local hooked = debug.gethook() ~= nil
  debug.sethook()
  return s .. " " .. y .. " " .. tostring(hooked) .. " " .. #t
)";
const char kAnswer[] = "60055 4 true 50";

// The program's text with the profiler loaded and its options made, profiled or not: the
// host's heap holds the same program objects either way. Unprofiled, the program runs under a
// call and count hook of its own: Lua grows a stack by LUA_MINSTACK slots to call any hook,
// which a hooked program pays in its heap, and the profiler's hooks no more.
std::string program_text(const std::string& options, bool profiled) {
  return "local profiler, options = require('profiler'), {" + options + ", display = false}\n" +
         "local function program() " + kProgram + " end\n" +
         (profiled ? "return profiler.statprof(program, options)"
                   : "return select(2, pcall(function() debug.sethook(function() end, 'c', 1) return program() end))");
}

int open_libraries(lua_State* L) {
  luaL_openlibs(L);
  luaL_requiref(L, "profiler", luaopen_profiler, 0);
  return 0;
}

// The program's answer in a fresh state whose heap the host caps at `cap` bytes, or "ERROR"
// and Lua's message.
std::string run_capped(long long cap, const std::string& options, bool profiled) {
  CountingAllocator host;
  host.limit = cap;
  lua_State* L = lua_newstate(CountingAllocator::alloc, &host);
  if (!L) return "ERROR no state";
  std::string out;
  lua_pushcfunction(L, open_libraries);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
    out = "ERROR libraries";
  } else {
    const std::string code = program_text(options, profiled);
    const bool ok = luaL_dostring(L, code.c_str()) == LUA_OK;
    const char* text = lua_tostring(L, -1);
    out = std::string(ok ? "" : "ERROR ") + (text ? text : "?");
  }
  lua_close(L);
  CHECK(host.live == 0);
  return out;
}

// The smallest cap, to 16 bytes, under which the program runs unprofiled, looked for between
// `fails` and `runs`.
long long smallest_cap(const std::string& options, long long fails = 4 << 10, long long runs = 1 << 20) {
  REQUIRE(run_capped(runs, options, false) == kAnswer);
  while (runs - fails > 16) {
    const long long mid = (fails + runs) / 2;
    (run_capped(mid, options, false) == kAnswer ? runs : fails) = mid;
  }
  return runs;
}

// Every mode that makes Lua objects or installs a hook or the allocator tap.
const char* const kModes[] = {
    "hz = 10000",
    "hz = 10000, clock = 'wall'",
    "hz = 10000, count_calls = true",
    "hz = 1000, alloc = 256",
    "hz = 1000, gc = true",
    "hz = 10000, clock = 'wall', count_calls = true, alloc = 256, gc = true, full_stacks = true",
};

}  // namespace

// [search]: a binary search runs the program ~50 times; valgrind (memcheck.capped_heap) skips it
// and runs every mode once in the test below.
TEST_CASE("a host whose Lua heap is capped at what its program needs runs the same profiled, in every mode",
          "[capped][search]") {
  long long near = 0;  // the modes' options differ only in their text: their caps are close
  for (const char* mode : kModes) {
    CAPTURE(mode);
    const long long cap = near ? smallest_cap(mode, near - 1024, near + 1024) : smallest_cap(mode);
    near = cap;
    CAPTURE(cap);
    CHECK(run_capped(cap - 2048, mode, false) != kAnswer);  // the cap binds
    CHECK(run_capped(cap, mode, true) == kAnswer);
  }
}

TEST_CASE("profilers in turn on one capped state keep the host's heap as the program left it", "[capped]") {
  CountingAllocator host;
  lua_State* L = lua_newstate(CountingAllocator::alloc, &host);
  REQUIRE(open_libraries(L) == 0);
  auto settle = [&] {
    lua_gc(L, LUA_GCCOLLECT);
    lua_gc(L, LUA_GCCOLLECT);  // the finalizers' objects too
    return host.live;
  };
  long long first = 0;
  const int modes = sizeof kModes / sizeof *kModes;
  for (int round = 0; round < modes + 2; ++round) {  // every mode in turn, the first ones twice
    const char* mode = kModes[round % modes];
    CAPTURE(round, mode);
    const std::string code = program_text(mode, true);
    REQUIRE(luaL_dostring(L, code.c_str()) == LUA_OK);
    CHECK(std::string(lua_tostring(L, -1)) == kAnswer);
    lua_pop(L, 1);
    if (round == 0) {
      first = settle();
      host.limit = first + (16 << 10);  // a cap the rounds run under
    } else {
      // Nothing of ours builds up in the host's heap (where the collections fall moves a stack's
      // size by a few slots either way: 96 bytes seen).
      CHECK(settle() <= first + 256);
    }
  }
  lua_close(L);
  CHECK(host.live == 0);
}

TEST_CASE("samplers in turn on one state take back the allocator tap their predecessor left", "[capped]") {
  CountingAllocator host;
  lua_State* L = lua_newstate(CountingAllocator::alloc, &host);
  luaL_openlibs(L);
  // A sampler goes with its state (attach_sampler); here they are made and destroyed by hand.
  void* first_tap = nullptr;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    auto* s = new LuaSampler(L);
    void* tap = nullptr;
    CHECK(lua_getallocf(L, &tap) != CountingAllocator::alloc);
    if (round == 0) first_tap = tap;
    CHECK(tap == first_tap);  // the chain never grows
    SamplerSettings st;
    st.period_ns = 100'000;
    st.count_calls = true;
    std::string error;
    REQUIRE(s->start(L, st, &error));
    REQUIRE(luaL_dostring(L, "local t = {} for i = 1, 100 do t[i] = {i} end return #t") == LUA_OK);
    lua_pop(L, 1);
    s->stop();
    CHECK(s->own_heap_bytes() > 0);
    delete s;
  }
  lua_close(L);
  CHECK(host.live == 0);  // and valgrind or LeakSanitizer: no arena block outlives the state
}
