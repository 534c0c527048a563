// The Lua adapter driven from C++, the way an engine embeds it.
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <cmath>
#include <cstdlib>
#include <time.h>
#include <memory>
#include <string>
#include <unordered_map>

#include "../core/blocked_arm_race.hpp"
#include "../core/frame_loop_script.hpp"
#include "counting_allocator.hpp"
#include "lua_attach.hpp"
#include "profiler_module.hpp"
#include "pointer_id_map.hpp"
#include "scriptprof/statprof_flat_report.hpp"

using namespace scriptprof;
using namespace scriptprof::lua;

namespace {

struct State {
  lua_State* L = luaL_newstate();
  State() { luaL_openlibs(L); }
  ~State() { lua_close(L); }
  void run(const char* code) {
    if (luaL_dostring(L, code) != LUA_OK) FAIL(lua_tostring(L, -1));
  }
};

SamplerSettings at(std::uint64_t hz, TimerClock clock = TimerClock::Cpu) {
  SamplerSettings s;
  s.period_ns = 1'000'000'000u / hz;
  s.clock = clock;
  return s;
}

std::uint64_t self_of(const Profile& p, const std::string& prefix) {
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.functions.label(f).rfind(prefix, 0) == 0) return p.counts(f).self;
  return 0;
}

std::uint64_t cumulative_of(const Profile& p, const std::string& prefix) {
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.functions.label(f).rfind(prefix, 0) == 0) return p.counts(f).cumulative;
  return 0;
}

int host_hook_calls = 0;
void host_hook(lua_State*, lua_Debug*) { ++host_hook_calls; }

}  // namespace

TEST_CASE("a profiled run restores the host's own hook exactly") {
  State s;
  lua_sethook(s.L, host_hook, LUA_MASKCOUNT, 1000);
  LuaSampler* sampler = attach_sampler(s.L);
  std::string error;
  host_hook_calls = 0;
  REQUIRE(sampler->start(s.L, at(5000), &error));
  s.run("local x = 0 for i = 1, 3e6 do x = x + i end");
  sampler->stop();
  CHECK(lua_gethook(s.L) == host_hook);
  CHECK(lua_gethookmask(s.L) == LUA_MASKCOUNT);
  CHECK(lua_gethookcount(s.L) == 1000);
  CHECK(host_hook_calls > 1000);  // it kept firing during the run
  CHECK(sampler->engine().profile().sample_weight() > 0);
  CHECK(check_invariants(sampler->engine().profile()).empty());
}

namespace {
int nap(lua_State* L) {  // a C function that blocks, as a host's sleep or read does
  timespec ts{0, static_cast<long>(luaL_checknumber(L, 1) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return 0;
}
int thread_cpu(lua_State* L) {  // the thread's CPU clock, seconds: a frame loop's truth
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  lua_pushnumber(L, static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9);
  return 1;
}

// A sampler on the wall clock at `hz`, started on s with `nap` registered.
LuaSampler* start_with_nap(State& s, std::uint64_t hz) {
  lua_register(s.L, "nap", nap);
  LuaSampler* sampler = attach_sampler(s.L);
  std::string error;
  REQUIRE(sampler->start(s.L, at(hz, TimerClock::Wall), &error));
  return sampler;
}
}  // namespace

// Ticks due while the thread was blocked come under a "(blocked)" leaf, a function the engine
// makes: the adapter's own tables must follow every id, or a function made after it reads past
// them (it crashed the wall-clock torture run under load).
TEST_CASE("wall clock: time blocked in a C function is (blocked) - and functions made after it are named") {
  State s;
  LuaSampler* sampler = start_with_nap(s, 2000);
  s.run(R"(
    local function waiter() for _ = 1, 20 do nap(0.005); local x = 0 for i = 1, 2e4 do x = x + i end end end
    waiter()
    -- Many new functions after the first (blocked) frame exists.
    for k = 1, 200 do
      local f = load("return function(n) local x = 0 for i = 1, n do x = x + i end return x end", "=chunk" .. k)()
      f(3000)
    end)");
  sampler->stop();
  const Profile& p = sampler->engine().profile();
  CHECK(check_invariants(p).empty());
  CHECK(p.health.off_cpu > 50);  // ~100 ms blocked at 2 kHz: ~200 ticks, most seen off the CPU
  std::uint64_t blocked = 0;
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.functions.label(f) == "(blocked)") blocked = p.counts(f).self;
  CHECK(blocked == p.health.off_cpu);
  CHECK(self_of(p, "waiter") + blocked > 0);
}

// The ticks of a sleep reach the stack that slept: the timer's thread arms a return hook while
// the thread sleeps, and the C function's return is the sample. A signal once it runs again
// found the next function instead (a frame loop's first function got its sleeps: 0.86 for 0.76).
TEST_CASE("wall clock: a sleep's ticks are the sleeping C function's, not what runs after it") {
  State s;
  LuaSampler* sampler = start_with_nap(s, 1000);
  s.run(R"(
    local function after() local x = 0 for i = 1, 2e5 do x = x + i end return x end
    local function sleeper() nap(0.004) end
    for _ = 1, 50 do sleeper() after() end)");
  sampler->stop();
  const Profile& p = sampler->engine().profile();
  CHECK(check_invariants(p).empty());
  std::uint64_t under_nap = 0, elsewhere = 0;
  for (NodeId n = 0; n < p.tree.size(); ++n) {
    const CallTreeNode& node = p.tree.node(n);
    if (node.function == kNoFunction || p.functions.label(node.function) != "(blocked)") continue;
    const NodeId parent = node.parent;
    const bool in_nap = parent != kNoNode && p.tree.node(parent).function != kNoFunction &&
                        p.functions.label(p.tree.node(parent).function).find("nap") != std::string::npos;
    (in_nap ? under_nap : elsewhere) += node.self;
  }
  INFO(under_nap << " blocked ticks under nap, " << elsewhere << " elsewhere");
  CHECK(under_nap >= 150);  // 200 ms asleep at 1 kHz
  CHECK(elsewhere * 10 <= under_nap);
}

// The timer's thread writes a blocked state's hook fields only where they are still empty
// (compare-and-swap): a thread that wakes and sets a hook of its own at that moment keeps it,
// and our arm is the one lost. Plain stores there could leave our hook with its mask, or its
// hook with our mask.
TEST_CASE("a program's hooks survive a wake at any moment of the timer thread's arm") {
  std::string plain;
  {
    State s;
    s.run(scriptprof::test::hook_toggle_script().c_str());
    lua_getglobal(s.L, "result");
    plain = lua_tostring(s.L, -1);
  }
  State s;
  LuaSampler* sampler = attach_sampler(s.L);
  std::string error;
  SamplerSettings settings = at(10000, TimerClock::Wall);
  settings.max_samples = 0;  // the stand-in timer goes on past a limit's stop, as the real one does not
  REQUIRE(sampler->start(s.L, settings, &error));
  scriptprof::test::with_blocked_arms(sampler->engine(), [&] { s.run(scriptprof::test::hook_toggle_script().c_str()); });
  sampler->stop();
  lua_getglobal(s.L, "result");
  CHECK(std::string(lua_tostring(s.L, -1)) == plain);
  CHECK(lua_gethook(s.L) == nullptr);
}

// A game's frame loop under Lua 5.4: work, then a 1 ms sleep in a C function. On either clock
// the work's split must come out as its CPU time says (the wall clock gave the frame's first
// function its sleeps: 0.86 for 0.76). [serial]: see the LuaJIT test of the same name.
TEST_CASE("A Lua 5.4 frame loop's split between its functions is its CPU time's, on either clock", "[serial]") {
  for (TimerClock clock : {TimerClock::Cpu, TimerClock::Wall}) {
    State s;
    lua_register(s.L, "nap", nap);
    lua_register(s.L, "thread_cpu", thread_cpu);
    LuaSampler* sampler = attach_sampler(s.L);
    std::string error;
    REQUIRE(sampler->start(s.L, at(1000, clock), &error));
    s.run(scriptprof::test::frame_loop_script(600).c_str());
    sampler->stop();
    lua_getglobal(s.L, "truth");
    const double truth = lua_tonumber(s.L, -1);
    lua_pop(s.L, 1);
    const Profile& p = sampler->engine().profile();
    const double a = static_cast<double>(cumulative_of(p, "step (")), b = static_cast<double>(cumulative_of(p, "paint ("));
    INFO((clock == TimerClock::Cpu ? "cpu" : "wall") << " clock: step " << a << ", paint " << b << " samples; CPU time says "
                                                     << truth);
    REQUIRE(a + b > 300);
    const double share = a / (a + b), sd = std::sqrt(truth * (1 - truth) / (a + b));
    CHECK(share == Approx(truth).margin(4 * sd + 0.03));
  }
}

TEST_CASE("start twice is refused with a reason") {
  State s;
  LuaSampler* sampler = attach_sampler(s.L);
  std::string error;
  REQUIRE(sampler->start(s.L, at(100), &error));
  CHECK_FALSE(sampler->start(s.L, at(100), &error));
  CHECK(error == "the profiler is already active");
  sampler->stop();
  CHECK_FALSE(sampler->engine().active());
}

TEST_CASE("a C host resuming a coroutine itself tells the adapter and samples follow") {
  State s;
  s.run(R"(
    function busy(n) local x = 0 for i = 1, n do x = x + i % 5 end return x end
    function body() for i = 1, 40 do busy(300000); coroutine.yield(i) end end
  )");
  LuaSampler* sampler = attach_sampler(s.L);
  lua_State* co = lua_newthread(s.L);
  lua_getglobal(co, "body");
  std::string error;
  REQUIRE(sampler->start(s.L, at(1000), &error));
  int status = LUA_YIELD, nres = 0;
  while (status == LUA_YIELD) {
    sampler->enter_coroutine(s.L, co);  // the one call pair a host makes around lua_resume
    status = lua_resume(co, s.L, 0, &nres);
    sampler->leave_coroutine(co, s.L);
    lua_pop(co, nres);
  }
  sampler->stop();
  REQUIRE(status == LUA_OK);
  const Profile& p = sampler->engine().profile();
  INFO(statprof_flat_report(p));
  CHECK(self_of(p, "busy (") >= p.sample_weight() * 9 / 10);
  CHECK(check_invariants(p).empty());
}

namespace {
LuaSampler* g_ticked = nullptr;
std::uint64_t g_tick_ns = 0;
// A tick handed to the engine as the timer would, from inside the running Lua code.
int tick_now(lua_State*) {
  g_ticked->engine().on_tick(1, 0, g_tick_ns += 1'000'000);
  return 0;
}
// A tick that lands in a C function which then yields: the coroutine is armed, and suspended
// before any instruction of it runs, so the arm waits in it.
int tick_and_yield(lua_State* L) {
  tick_now(L);
  return lua_yield(L, 0);
}
}  // namespace

TEST_CASE("a coroutine collected while armed for a sample leaves the arm, and its tick is the resumer's") {
  State s;
  LuaSampler* sampler = attach_sampler(s.L);
  g_ticked = sampler;
  lua_register(s.L, "tick_now", tick_now);
  lua_register(s.L, "tick_and_yield", tick_and_yield);
  std::string error;
  // A rate far below the test's length: every tick is the test's own.
  REQUIRE(sampler->start(s.L, at(1), &error));
  s.run(R"(
    function abandon()
      local co = coroutine.create(function() tick_and_yield() end)
      assert(coroutine.resume(co))
      co = nil
      collectgarbage(); collectgarbage()  -- the armed coroutine is freed
    end
    function resumer() abandon(); tick_now() end
    resumer()
  )");
  sampler->stop();
  g_ticked = nullptr;
  const Profile& p = sampler->engine().profile();
  INFO(statprof_flat_report(p));
  // Both ticks are sampled once the resumer runs on; nothing wrote to the freed coroutine
  // (the AddressSanitizer build would stop here).
  CHECK(p.sample_weight() == 2);
  CHECK(cumulative_of(p, "resumer (") == 2);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("closing the state while profiling stops everything cleanly") {
  auto* s = new State;
  LuaSampler* sampler = attach_sampler(s->L);
  std::string error;
  REQUIRE(sampler->start(s->L, at(10000), &error));
  s->run("local x = 0 for i = 1, 1e6 do x = x + i end");
  delete s;  // lua_close frees the sampler, which stops its timer first
  SUCCEED("no tick reached a freed sampler");
}

// Thousands of runs in every mode: LeakSanitizer (ASan build) checks nothing is left behind.
TEST_CASE("many start and stop cycles keep working and keep one profile") {
  State s;
  LuaSampler* sampler = attach_sampler(s.L);
  std::string error;
  for (int i = 0; i < 3000; ++i) {
    SamplerSettings st = at(10000);
    st.count_calls = i % 2 == 0;
    st.alloc_bytes = i % 3 == 0 ? 1024 : 0;
    st.gc_samples = i % 5 == 0;
    st.full_stacks = i % 7 == 0;
    st.max_samples = 0;  // the runs add to one profile: ~110k allocation samples in all
    REQUIRE(sampler->start(s.L, st, &error));
    s.run("local x = 0 for i = 1, 2e3 do x = x + #{i} end");
    sampler->stop();
  }
  CHECK(lua_gethook(s.L) == nullptr);
  CHECK(check_invariants(sampler->engine().profile()).empty());
  CHECK(sampler->engine().accumulated_seconds() > 0.0);
}

// Both run modes: the one that watches sizes and frees (allocation sampling, call counting),
// and the stack guard alone that every other run has.
TEST_CASE("the allocator tap passes failures and frees through, and the host's heap holds the program's blocks") {
  CountingAllocator host;
  lua_State* L = lua_newstate(CountingAllocator::alloc, &host);
  luaL_openlibs(L);
  const long long before = host.live;
  LuaSampler* s = attach_sampler(L);
  void* ud = nullptr;
  CHECK(lua_getallocf(L, &ud) != CountingAllocator::alloc);  // in the chain from attach
  // Whatever attach made or grew lives outside the host's heap (a grown registry moves out).
  CHECK(host.live <= before);
  CHECK(s->own_heap_bytes() > 0);
  SamplerSettings st = at(1000);
  bool sample_space = GENERATE(true, false);
  CAPTURE(sample_space);
  if (sample_space) st.alloc_bytes = 256;
  std::string error;
  REQUIRE(s->start(L, st, &error));
  host.fail_above = 1 << 20;
  const char* code = "local ok, e = pcall(string.rep, 'x', 1 << 24) assert(not ok) return e";
  REQUIRE(luaL_dostring(L, code) == LUA_OK);
  std::string profiled = lua_tostring(L, -1);
  lua_pop(L, 1);
  REQUIRE(luaL_dostring(L, "local t = {} for i = 1, 20000 do t[i] = {i, tostring(i)} end t = nil "
                           "collectgarbage() collectgarbage()") == LUA_OK);
  s->stop();
  REQUIRE(luaL_dostring(L, code) == LUA_OK);
  CHECK(profiled == lua_tostring(L, -1));  // "not enough memory" both times
  lua_pop(L, 1);
  // The Lua heap is what Lua says it is, the host's part and ours: no byte lost or made up.
  lua_gc(L, LUA_GCCOLLECT);
  const long long lua_heap = static_cast<long long>(lua_gc(L, LUA_GCCOUNT)) * 1024 + lua_gc(L, LUA_GCCOUNTB);
  CHECK(host.live + static_cast<long long>(s->own_heap_bytes()) == lua_heap);
  const Profile& space = s->engine().profile(SampleKind::Space);
  if (sample_space)
    CHECK(space.sample_weight() > 20000 * 40);  // at least the tables' headers were sampled
  else
    CHECK(space.sample_weight() == 0);
  CHECK(check_invariants(space).empty());
  lua_close(L);
  CHECK(host.live == 0);
}

// Memory running out while every kind of sampling is on: the program gets Lua's own "not
// enough memory" where it would without the profiler, the profiler keeps working afterwards,
// and nothing leaks (LeakSanitizer, in the ASan build).
TEST_CASE("running out of memory under the profiler is the program's usual error") {
  const char* fill =
      "local function fill() local t = {} for i = 1, 1e9 do t[i] = {i, tostring(i)} end end\n"
      "local results = {}\n"
      "for round = 1, 5 do local ok, e = pcall(fill) results[round] = tostring(e) collectgarbage() end\n"
      "return table.concat(results, ' | ')";
  auto run = [&](bool profiled, std::string* health) {
    CountingAllocator host;
    host.limit = 4 << 20;
    lua_State* L = lua_newstate(CountingAllocator::alloc, &host);
    luaL_openlibs(L);
    luaL_requiref(L, "profiler", luaopen_profiler, 0);
    lua_pop(L, 1);
    std::string code = profiled
        ? std::string("return require('profiler').statprof(function() ") + fill +
              " end, {hz = 10000, count_calls = true, alloc = 512, gc = true, display = false})"
        : std::string(fill);
    std::string out = luaL_dostring(L, code.c_str()) == LUA_OK ? lua_tostring(L, -1) : std::string("ERROR ") + lua_tostring(L, -1);
    lua_settop(L, 0);
    if (profiled) {
      // Still usable: another run works and records samples.
      if (luaL_dostring(L, "local p = require('profiler') p.statprof(function() local x = 0 for i = 1, 3e5 do x = x + #{i} end end, "
                           "{hz = 10000, display = false}) return p.sample_count()") == LUA_OK)
        *health = lua_tointeger(L, -1) > 0 ? "samples" : "no samples";
      else
        *health = lua_tostring(L, -1);
    }
    lua_close(L);
    CHECK(host.live == 0);
    return out;
  };
  std::string unused, health;
  std::string plain = run(false, &unused);
  std::string profiled = run(true, &health);
  CHECK(plain.find("not enough memory") != std::string::npos);
  CHECK(profiled == plain);
  CHECK(health == "samples");
}

TEST_CASE("pointer id map agrees with a hash map through inserts and backward-shift erases") {
  PointerIdMap map;
  std::unordered_map<const void*, FunctionId> model;
  std::uint64_t x = 88172645463325252ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int step = 0; step < 200000; ++step) {
    // Few distinct keys, clustered like heap addresses, so probe runs collide and wrap.
    const void* key = reinterpret_cast<const void*>(0x10000 + (next() % 3000) * 16);
    if (next() % 3 == 0) {
      map.erase(key);
      model.erase(key);
    } else {
      auto id = static_cast<FunctionId>(next() % 1000);
      map.insert(key, id);
      model[key] = id;
    }
    if (step % 1000 == 0) {
      REQUIRE(map.size() == model.size());
      for (const auto& [k, v] : model) {
        FunctionId got = kNoFunction;
        REQUIRE(map.find(k, &got));
        REQUIRE(got == v);
      }
    }
  }
  FunctionId unused;
  CHECK_FALSE(map.find(reinterpret_cast<const void*>(0x8), &unused));
}

// Lua errors longjmp past C++ frames: any std::string alive there leaks. The module raises only
// once its own objects are gone; in the ASan build LeakSanitizer checks this test's process.
TEST_CASE("errors raised through the module keep their messages and leak nothing") {
  State s;
  luaL_requiref(s.L, "profiler", luaopen_profiler, 0);
  lua_pop(s.L, 1);
  s.run(R"(
    local profiler = require "profiler"
    local unwritable = "/nonexistent-scriptprof-directory/a-report-file-name-longer-than-sso.txt"
    for i = 1, 50 do
      -- The profiled function's error passes through statprof unchanged, options and all.
      local ok, err = pcall(profiler.statprof, function() error("boom " .. i, 0) end,
                            {hz = 1000, file = unwritable})
      assert(not ok and err == "boom " .. i, err)
      -- A report that cannot be written says where.
      ok, err = pcall(profiler.statprof, function() end, {hz = 1000, file = unwritable})
      assert(not ok and err:find("nonexistent-scriptprof-directory", 1, true), err)
      ok, err = pcall(profiler.display, unwritable)
      assert(not ok and err:find("nonexistent-scriptprof-directory", 1, true), err)
      ok, err = pcall(profiler.report, "no-such-style-with-a-long-name", unwritable)
      assert(not ok and err:find("no-such-style-with-a-long-name", 1, true), err)
      local hidden = {hidden = {"a-hidden-function-name-longer-than-sso", "another-long-hidden-name"}}
      ok, err = pcall(profiler.report, "allegro", unwritable, hidden)
      assert(not ok and err:find("nonexistent-scriptprof-directory", 1, true), err)
      ok, err = pcall(profiler.report, "allegro", nil, {hidden = {"a-hidden-function-name-longer-than-sso", 7}})
      assert(not ok and err:find("a list of function names", 1, true), err)
      ok, err = pcall(profiler.write, unwritable, "lispworks")
      assert(not ok and err:find("nonexistent-scriptprof-directory", 1, true), err)
      ok, err = pcall(profiler.read, unwritable)
      assert(not ok and err:find("nonexistent-scriptprof-directory", 1, true), err)
      ok, err = pcall(profiler.statprof, function() end, {hz = 1e9})
      assert(not ok and err:find("hz", 1, true), err)
      ok, err = pcall(profiler.annotate, profiler.statprof, unwritable)
      assert(not ok and err:find("nonexistent-scriptprof-directory", 1, true), err)
    end
    assert(not profiler.active(), "the profiler is off after every error")
  )");
}

// The call hook finds a started sampler by its universe (a few slots), and any other through
// the registry: ten universes counting at once, interleaved, each count exact and its own.
TEST_CASE("ten universes count their own calls exactly, through either lookup of the hook") {
  constexpr int kUniverses = 10;
  std::vector<std::unique_ptr<State>> states;
  std::vector<LuaSampler*> samplers;
  std::string error;
  for (int i = 0; i < kUniverses; ++i) {
    states.push_back(std::make_unique<State>());
    states.back()->run("function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end");
    samplers.push_back(attach_sampler(states.back()->L));
    SamplerSettings st = at(100);
    st.count_calls = true;
    REQUIRE(samplers.back()->start(states.back()->L, st, &error));
  }
  // Universe i runs fib(10 + i % 5), twice, in turns with the others.
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < kUniverses; ++i) states[i]->run(("fib(" + std::to_string(10 + i % 5) + ")").c_str());
  const std::uint64_t calls[] = {177, 287, 465, 753, 1219};  // calls of fib(10) ... fib(14)
  for (int i = 0; i < kUniverses; ++i) {
    samplers[i]->stop();
    const Profile& p = samplers[i]->engine().profile();
    std::uint64_t fib_calls = 0;
    for (FunctionId f = 0; f < p.functions.size(); ++f)
      if (p.functions.label(f).rfind("fib", 0) == 0) fib_calls = p.counts(f).calls.value_or(0);
    CHECK(fib_calls == 2 * calls[i % 5]);
  }
}
