// The LuaJIT adapter with the JIT on: attribution inside compiled code, the VM-state frames and
// shares, names, exact counts with the JIT off and back on, and coexistence with jit.profile.
#include <catch2/catch.hpp>

#include <signal.h>

#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include "../core/blocked_arm_race.hpp"
#include "../core/frame_loop_script.hpp"
#include "../core/function_lookup.hpp"
#include "luajit_sampler.hpp"
#include "luajit_attach.hpp"

using scriptprof::FunctionId;
using scriptprof::Profile;
using scriptprof::RunSettings;
using scriptprof::test::function_named;
using scriptprof::luajit::LuaJitSampler;

namespace {

struct State {
  lua_State* L = luaL_newstate();
  State() { luaL_openlibs(L); }
  ~State() { lua_close(L); }
  // Runs `code` (its own text is its source, as a chunk loaded from a string: names come from
  // its declarations); returns its error message, or "" on success.
  std::string run(const std::string& code) {
    if (luaL_loadbuffer(L, code.data(), code.size(), code.c_str()) != 0 || lua_pcall(L, 0, 0, 0) != 0) {
      std::string e = lua_tostring(L, -1);
      lua_pop(L, 1);
      return e;
    }
    return "";
  }
  bool boolean(const std::string& expr) {
    std::string code = "return " + expr;
    luaL_loadbuffer(L, code.data(), code.size(), "=expr");
    lua_pcall(L, 0, 1, 0);
    bool b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
  }
};

// What `program` leaves in the global `result` when it runs in a fresh state without the profiler.
std::string plain_result(const char* program) {
  State plain;
  REQUIRE(plain.run(program).empty());
  lua_getglobal(plain.L, "result");
  return lua_tostring(plain.L, -1);
}

RunSettings at_hz(unsigned hz, scriptprof::TimerClock clock = scriptprof::TimerClock::Cpu) {
  RunSettings s;
  s.period_ns = 1'000'000'000u / hz;
  s.clock = clock;
  return s;
}

const char* kSplit = R"(
  local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
  local function heavy() local r = spin(3 * 4000000) return r end
  local function light() local r = spin(4000000) return r end
  for _ = 1, 6 do heavy() light() end
)";

}  // namespace

TEST_CASE("A known split is measured inside compiled code, with the JIT on") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(1000), &error));
  CHECK(s.boolean("jit.status()"));
  REQUIRE(s.run(kSplit).empty());
  sampler.stop();
  const Profile& p = sampler.engine().profile();
  FunctionId heavy = function_named(p, "heavy"), light = function_named(p, "light"), spin = function_named(p, "spin");
  REQUIRE(heavy != scriptprof::kNoFunction);
  REQUIRE(light != scriptprof::kNoFunction);
  REQUIRE(spin != scriptprof::kNoFunction);
  const double h = static_cast<double>(p.counts(heavy).cumulative), l = static_cast<double>(p.counts(light).cumulative);
  REQUIRE(h + l > 100);
  // 3:1 work: 75% within what a few hundred samples explain (4 standard deviations).
  const double share = h / (h + l), sd = std::sqrt(0.75 * 0.25 / (h + l));
  CHECK(share == Approx(0.75).margin(4 * sd + 0.02));
  // The loop ran compiled: the share LuaJIT's VM state gives says so.
  CHECK(p.jit_shares);
  CHECK(p.counts(spin).compiled * 2 > p.counts(spin).self);
}

TEST_CASE("Time in LuaJIT's collector is a (gc) frame, and the profile's GC time") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(5000), &error));
  REQUIRE(s.run(R"(
    local keep = {}
    for i = 1, 3000000 do keep[i % 5000 + 1] = { i, tostring(i) } end
  )").empty());
  sampler.stop();
  const Profile& p = sampler.engine().profile();
  FunctionId gc = function_named(p, "(gc)");
  REQUIRE(gc != scriptprof::kNoFunction);
  CHECK(p.functions.info(gc).collector);
  CHECK(p.counts(gc).self > 0);
  CHECK(p.gc_seconds > 0.0);
  CHECK(p.gc_seconds < p.total_seconds);
}

TEST_CASE("LuaJIT functions are named by their declarations and their libraries") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(2000), &error));
  REQUIRE(s.run(R"(
    Vec = {}
    function Vec.new(n) local t = {} for i = 1, n do t[i] = string.rep("x", 200) end return t end
    local function update() for _ = 1, 400 do Vec.new(500) end end
    function run_update() update() end  -- update itself stays local: named by its declaration
  )").empty());
  // Compiled, update() takes a few milliseconds: run it until the profile holds 100 samples
  // (with 2 it named only the main chunk and a C frame, now and then on a loaded machine).
  for (int i = 0; i < 500 && sampler.engine().profile().sample_count() < 100; ++i) REQUIRE(s.run("run_update()").empty());
  sampler.stop();
  const Profile& p = sampler.engine().profile();
  std::string seen;  // what the profile holds, for a failure's message
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    seen += p.functions.label(f) + ": self " + std::to_string(p.counts(f).self) + ", cumulative " +
            std::to_string(p.counts(f).cumulative) + "\n";
  INFO(p.sample_count() << " samples\n" << seen);
  CHECK(function_named(p, "Vec.new") != scriptprof::kNoFunction);
  CHECK(function_named(p, "update") != scriptprof::kNoFunction);
  for (FunctionId f = 0; f < p.functions.size(); ++f) CHECK(p.functions.info(f).name != "?");
}

TEST_CASE("Exact counts turn the JIT off for the run and back on at its end") {
  State s;
  LuaJitSampler sampler(s.L);
  RunSettings settings = at_hz(1000);
  settings.count_calls = true;
  std::string error;
  REQUIRE(sampler.start(s.L, settings, &error));
  CHECK_FALSE(s.boolean("jit.status()"));
  REQUIRE(s.run("function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end fib(15)").empty());
  sampler.stop();
  CHECK(s.boolean("jit.status()"));
  const Profile& p = sampler.engine().profile();
  FunctionId fib = function_named(p, "fib");
  REQUIRE(fib != scriptprof::kNoFunction);
  CHECK(p.counts(fib).calls.value_or(0) == 1973);  // fib(15) makes 1973 calls
  CHECK(p.runtime_note.find("JIT was off") != std::string::npos);
}

TEST_CASE("jit.profile and the sampler never run half-on together") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(1000), &error));
  std::string e = s.run("require('jit.profile').start('f', function() end)");
  CHECK(e.find("cannot start while scriptprof is profiling") != std::string::npos);
  sampler.stop();
  // After the run, the program's own profiler works, and ours refuses to start beside it.
  REQUIRE(s.run("require('jit.profile').start('f', function() end)").empty());
  REQUIRE_FALSE(sampler.start(s.L, at_hz(1000), &error));
  CHECK(error.find("another profiler is running") != std::string::npos);
  REQUIRE(s.run("require('jit.profile').stop()").empty());
  error.clear();
  REQUIRE(sampler.start(s.L, at_hz(1000), &error));
  INFO(error);
  sampler.stop();
}

TEST_CASE("Start and stop cycles leave SIGPROF as it was and a program's results unchanged") {
  const char* program = R"(
    local acc = {}
    for round = 1, 30 do
      local co = coroutine.wrap(function(a) for i = 1, 3 do a = coroutine.yield(a + i) end return a end)
      local t = co(round) + co(1) + co(2)
      local ok, err = pcall(error, { code = round })
      acc[#acc + 1] = t + err.code + #string.format("%5.2f", round / 3)
      local s = 0 for i = 1, 20000 do s = s + math.sin(i) end
      acc[#acc + 1] = math.floor(s * 1000)
    end
    result = table.concat(acc, ",")
  )";
  const std::string expected = plain_result(program);
  State s;
  LuaJitSampler sampler(s.L);
  struct sigaction before;
  sigaction(SIGPROF, nullptr, &before);
  for (int cycle = 0; cycle < 10; ++cycle) {
    std::string error;
    REQUIRE(sampler.start(s.L, at_hz(cycle % 2 ? 10000 : 1000), &error));
    REQUIRE(s.run(program).empty());
    sampler.stop();
    lua_getglobal(s.L, "result");
    CHECK(lua_tostring(s.L, -1) == expected);
    lua_pop(s.L, 1);
    // SIGPROF is the program's again: LuaJIT's handler was taken off at once and the engine's
    // ticks come on a signal of their own.
    struct sigaction sa;
    sigaction(SIGPROF, nullptr, &sa);
    CHECK(sa.sa_handler == before.sa_handler);
  }
  CHECK(sampler.engine().profile().sample_weight() > 0);
}

TEST_CASE("A coroutine's samples sit under the frames that resumed it, wrap included") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(2000), &error));
  REQUIRE(s.run(R"(
    local function inner() local x = 0 for i = 1, 40000000 do x = x + i % 3 end coroutine.yield(x) end
    local function outer() local gen = coroutine.wrap(inner) local r = gen() return r end  -- no tail call
    local function driver() local co = coroutine.create(inner) local ok = coroutine.resume(co) return ok end
    outer() driver()
  )").empty());
  sampler.stop();
  const Profile& p = sampler.engine().profile();
  FunctionId inner = function_named(p, "inner"), outer = function_named(p, "outer"), driver = function_named(p, "driver");
  REQUIRE(inner != scriptprof::kNoFunction);
  REQUIRE(outer != scriptprof::kNoFunction);
  REQUIRE(driver != scriptprof::kNoFunction);
  // inner's time is under outer (through wrap) and under driver (through resume), nowhere else.
  std::uint64_t under_outer = 0, under_driver = 0, alone = 0;
  std::string paths;  // every path to inner, for a failure's message
  for (scriptprof::NodeId n = 0; n < p.tree.size(); ++n) {
    if (p.tree.node(n).function != inner) continue;
    bool o = false, d = false;
    std::string path = p.functions.label(inner);
    for (scriptprof::NodeId a = p.tree.node(n).parent; a != scriptprof::kNoNode; a = p.tree.node(a).parent) {
      o |= p.tree.node(a).function == outer;
      d |= p.tree.node(a).function == driver;
      if (p.tree.node(a).function != scriptprof::kNoFunction) path = p.functions.label(p.tree.node(a).function) + " > " + path;
    }
    (o ? under_outer : d ? under_driver : alone) += p.tree.node(n).self;
    paths += path + ": self " + std::to_string(p.tree.node(n).self) + "\n";
  }
  INFO("paths to inner:\n" << paths);
  CHECK(under_outer > 20);
  CHECK(under_driver > 20);
  CHECK(alone == 0);
  CHECK(s.boolean("coroutine.resume ~= nil"));
}

// A compiled loop in 'f' mode takes its ticks at its exit, in one sample, with the VM state of
// the first: when that tick fell in the loop's own compile, the whole loop came out "(jit)".
// Forty fresh loops of ~10 ms at 10 kHz: a tick lands in a compile now and then (each loop is
// compiled anew), and the compiler keeps one tick of it.
TEST_CASE("A compiled loop whose first tick fell in its compile is the loop's time, not the compiler's") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(10000), &error));
  REQUIRE(s.run(R"lua(
    local source = "local function spin() local x = 0 for i = 1, 5000000 do x = x + i % 3 end return tostring(x) end local r = spin() return r"
    for k = 1, 40 do assert(load(source, "=loop"))() end
  )lua").empty());
  sampler.stop();
  const Profile& p = sampler.engine().profile();
  std::uint64_t in_spin = 0, in_jit = 0;  // each load makes a new function
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    if (p.functions.info(f).name == "spin") in_spin += p.counts(f).self;
    if (p.functions.info(f).name == "(jit)") in_jit += p.counts(f).self;
  }
  INFO("spin " << in_spin << " of " << p.sample_weight() << " ticks, (jit) " << in_jit);
  if (in_jit == 0) WARN("no tick fell in a compile this time: nothing was checked");
  REQUIRE(p.sample_weight() > 1000);
  CHECK(in_spin * 10 >= p.sample_weight() * 9);
  CHECK(in_jit <= 80);  // a tick or two per compile, never a loop's length (~100)
}

TEST_CASE("The tracking coroutine functions keep LuaJIT's results and messages") {
  const char* program = R"(
    local out = {}
    local function add(...) out[#out + 1] = table.concat({tostring((select(1, ...))), tostring((select(2, ...))), tostring((select(3, ...)))}, " ") end
    add(pcall(coroutine.wrap(function() error("boom") end)))
    local function direct() local g = coroutine.wrap(function() error("deep") end) g() end
    add(pcall(direct))
    local ok, e = pcall(coroutine.wrap(function() error({}) end)) add(ok, type(e))
    local done = coroutine.create(function(a, b) return a + b, "x" end)
    add(coroutine.resume(done, 1, 2))
    add(coroutine.resume(done))
    local w = coroutine.wrap(function() end) w()
    add(pcall(w))
    add(pcall(coroutine.resume, 42))
    local self
    self = coroutine.create(function() return coroutine.resume(self) end)
    add(coroutine.resume(self))
    local gen = coroutine.wrap(function(a) local b = coroutine.yield(a * 2) return b + 1 end)
    add(gen(5), gen(7))
    result = table.concat(out, "|")
  )";
  const std::string expected = plain_result(program);
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(1000), &error));
  REQUIRE(s.run(program).empty());
  sampler.stop();
  lua_getglobal(s.L, "result");
  CHECK(lua_tostring(s.L, -1) == expected);
}

TEST_CASE("gc samples: a stack after every LuaJIT collection, charged to the code that made garbage") {
  State s;
  LuaJitSampler sampler(s.L);
  RunSettings settings;
  settings.gc_samples = true;
  settings.sample_time = false;
  std::string error;
  REQUIRE(sampler.start(s.L, settings, &error));
  REQUIRE(s.run(R"(
    local function churn() local t for i = 1, 200000 do t = { i, i + 1 } end return t end
    local function quiet() local x = 0 for i = 1, 100000 do x = x + i end return x end
    for _ = 1, 20 do churn() quiet() end
    cycles_seen = collectgarbage("count")
  )").empty());
  sampler.stop();
  const Profile& p = sampler.engine().shared_profile(scriptprof::SampleKind::Gc).operator*();
  FunctionId churn = function_named(p, "churn"), quiet = function_named(p, "quiet");
  REQUIRE(churn != scriptprof::kNoFunction);
  CHECK(p.sample_weight() >= 5);  // one per cycle: 4M small tables make several cycles
  CHECK(p.counts(churn).cumulative * 10 >= p.sample_weight() * 9);
  CHECK((quiet == scriptprof::kNoFunction || p.counts(quiet).cumulative == 0));
  // The finalizer is the profiler's own: never a frame.
  for (FunctionId f = 0; f < p.functions.size(); ++f) CHECK(p.functions.info(f).name.find("gc") == std::string::npos);
  // A second run counts its own cycles only: the first run's sentinel, still waiting for its
  // cycle, is finalized in the second run's first cycle and samples nothing.
  const std::uint64_t before = p.sample_weight();
  REQUIRE(sampler.start(s.L, settings, &error));
  REQUIRE(s.run("collectgarbage() collectgarbage()").empty());
  sampler.stop();
  CHECK(sampler.engine().shared_profile(scriptprof::SampleKind::Gc)->sample_weight() - before == 2);
}

TEST_CASE("Allocation samples: bytes charged to the code that allocated them, JIT on") {
  State s;
  LuaJitSampler sampler(s.L);
  RunSettings settings;
  settings.alloc_bytes = 16 * 1024;
  settings.sample_time = false;
  std::string error;
  REQUIRE(sampler.start(s.L, settings, &error));
  CHECK(s.boolean("jit.status()"));
  REQUIRE(s.run(R"(
    local function big() local t for i = 1, 300000 do t = { i, i, i, i, i, i, i, i, i, i, i, i, i, i } end return t end
    local function small() local t for i = 1, 300000 do t = { i, i } end return t end
    for _ = 1, 5 do big() small() end
  )").empty());
  sampler.stop();
  const Profile& p = *sampler.engine().shared_profile(scriptprof::SampleKind::Space);
  FunctionId big = function_named(p, "big"), small = function_named(p, "small");
  REQUIRE(big != scriptprof::kNoFunction);
  REQUIRE(small != scriptprof::kNoFunction);
  const double b = static_cast<double>(p.counts(big).cumulative), m = static_cast<double>(p.counts(small).cumulative);
  // A 14-slot table costs more than twice a 2-slot one (header plus array part).
  CHECK(b > 2 * m);
  CHECK(m > 0);
  CHECK(b + m > 0.9 * static_cast<double>(p.sample_weight()));
}

TEST_CASE("Time in a C function is a (C) frame under its Lua caller, not the caller's own") {
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(2000), &error));
  REQUIRE(s.run(R"(
    local function build() local n = 0 for _ = 1, 6 do n = n + #string.rep("abc", 20000000) end return n end
    build()
  )").empty());
  sampler.stop();
  const Profile& p = sampler.engine().profile();
  FunctionId c = function_named(p, "(C)"), build = function_named(p, "build");
  REQUIRE(c != scriptprof::kNoFunction);
  REQUIRE(build != scriptprof::kNoFunction);
  CHECK(p.counts(c).self * 2 > p.counts(build).cumulative);  // string.rep is most of build's time
  CHECK(p.counts(build).self * 2 < p.counts(build).cumulative);
}

// On the wall clock a sleep is never cut short, and its time is kept. The ticks that fall due
// while the thread is asleep are handed to the timer's thread, which arms the VM while it
// sleeps: the first instruction after the wake takes them with their weight under (blocked), in
// the stack that slept, never in the work that the sleeper does after its sleep.
TEST_CASE("A sleep on the wall clock is uncut, its ticks kept under (blocked) in the function that slept") {
  for (unsigned hz : {1000u, 10000u}) {
    State s;
    LuaJitSampler sampler(s.L);
    std::string error;
    REQUIRE(sampler.start(s.L, at_hz(hz, scriptprof::TimerClock::Wall), &error));
    REQUIRE(s.run(R"(
      local ffi = require "ffi"
      ffi.cdef[[
        typedef struct { long tv_sec; long tv_nsec; } sp_sleep_ts;
        int nanosleep(const sp_sleep_ts *req, sp_sleep_ts *rem);
        int clock_gettime(int clk, sp_sleep_ts *tp);
      ]]
      local ts = ffi.new("sp_sleep_ts")
      local function now() ffi.C.clock_gettime(1, ts) return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
      -- Retried on EINTR, counting: a tick sent in the microseconds before the thread blocked may
      -- still cut it (the timer's documented window), ticks while it sleeps must not.
      local function work(seconds) local x, t = 0, now() while now() - t < seconds do x = x + 1 end return x end
      local function sleeper()
        work(0.03)
        local req, rem, cuts = ffi.new("sp_sleep_ts", 0, 200000000), ffi.new("sp_sleep_ts"), 0
        while ffi.C.nanosleep(req, rem) ~= 0 do cuts = cuts + 1; req.tv_sec, req.tv_nsec = rem.tv_sec, rem.tv_nsec end
        work(0.03)
        return cuts
      end
      result = sleeper()
    )").empty());
    sampler.stop();
    INFO(hz << " Hz");
    CHECK(s.boolean("result <= 1"));  // EINTR at most once, from a tick sent before the sleep
    const Profile& p = sampler.engine().profile();
    FunctionId sleeper = function_named(p, "sleeper"), work = function_named(p, "work"),
               blocked = function_named(p, "(blocked)");
    REQUIRE(sleeper != scriptprof::kNoFunction);
    REQUIRE(work != scriptprof::kNoFunction);
    REQUIRE(blocked != scriptprof::kNoFunction);
    const double asleep = 0.2 * hz, working = 0.06 * hz;
    const std::uint64_t in_sleeper = scriptprof::test::self_under(p, blocked, sleeper);
    INFO(p.counts(sleeper).cumulative << " samples in sleeper, " << p.counts(blocked).self << " blocked (" << in_sleeper
                                      << " under sleeper); ~" << working << " working, ~" << asleep << " asleep");
    // Off the CPU, weight kept, in the stack that slept (the timer's thread arms the wake), and
    // none of it under the work that ran before or after. (An arm the timer could not make,
    // its claim taken by a tick at that moment, leaves a wake's ticks at the root: 6% at
    // 10 kHz in the sanitizer build.)
    CHECK(static_cast<double>(in_sleeper) >= 0.8 * asleep);
    CHECK(static_cast<double>(in_sleeper) >= 0.9 * static_cast<double>(p.counts(blocked).self));
    CHECK(scriptprof::test::self_under(p, blocked, work) == 0);
    // The work's 30 ms are wall time, which holds our own sampling work too (not program time):
    // at 10 kHz in the sanitizer build that is a fifth of it.
    CHECK(static_cast<double>(p.counts(work).cumulative) >= 0.65 * working);
    CHECK(static_cast<double>(p.counts(work).cumulative) <= 1.3 * working);
  }
}

// LuaJIT's trigger (its SIGPROF handler) rewrites the VM's hook mask and dispatch table as a
// signal on the VM's own thread may; from the timer's thread (a blocked thread's wake) it must
// not meet the VM's own writes there: a program's debug.sethook waits for it, and none is made
// while the program has a hook (its entries and exits write the mask). Here the timer's thread
// arms without pause while the program runs, far more often than blocks and wakes would, and
// the program's hooks must still see every event.
TEST_CASE("Arms from the timer's thread keep a program's hooks whole, at any moment") {
  const std::string plain = plain_result(scriptprof::test::hook_toggle_script().c_str());
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  RunSettings settings = at_hz(10000, scriptprof::TimerClock::Wall);
  settings.max_samples = 0;  // the stand-in timer goes on past a limit's stop, as the real one does not
  REQUIRE(sampler.start(s.L, settings, &error));
  scriptprof::test::with_blocked_arms(sampler.engine(), [&] { REQUIRE(s.run(scriptprof::test::hook_toggle_script()).empty()); });
  sampler.stop();
  lua_getglobal(s.L, "result");
  CHECK(std::string(lua_tostring(s.L, -1)) == plain);
  lua_pop(s.L, 1);
  // The arms were made: off-CPU ticks under a Lua frame come only from an arm by the timer's
  // thread (the others stand at the root).
  const Profile& p = sampler.engine().profile();
  const FunctionId blocked = function_named(p, "(blocked)");
  REQUIRE(blocked != scriptprof::kNoFunction);
  CHECK(scriptprof::test::self_at_root(p, blocked) < p.counts(blocked).self);
}

// A game's frame loop: work, then a 1 ms sleep retried until whole (SDL_Delay's way). On either
// clock the work's split must come out as its CPU time says: the ticks that fall due after a
// wake must reach the frame's first function, not wait a period for the watcher's next look
// (the CPU clock gave 0.54-0.62 for 0.75), and a sleep's ticks must stay in the sleep (the
// wall clock gave the frame's first function 0.83).
TEST_CASE("A frame loop's split between its functions is its CPU time's, on either clock", "[serial]") {
  for (auto clock : {scriptprof::TimerClock::Cpu, scriptprof::TimerClock::Wall}) {
    State s;
    LuaJitSampler sampler(s.L);
    std::string error;
    REQUIRE(sampler.start(s.L, at_hz(1000, clock), &error));
    // nap retries on EINTR until the sleep is whole, as SDL_Delay does under love.timer.sleep.
    REQUIRE(s.run(R"(
      local ffi = require "ffi"
      ffi.cdef[[
        typedef struct { long tv_sec; long tv_nsec; } sp_frame_ts;
        int nanosleep(const sp_frame_ts *req, sp_frame_ts *rem);
        int clock_gettime(int clk, sp_frame_ts *tp);
      ]]
      local ts = ffi.new("sp_frame_ts")
      function thread_cpu() ffi.C.clock_gettime(3, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
      function nap(seconds)
        local req, rem = ffi.new("sp_frame_ts", 0, seconds * 1e9), ffi.new("sp_frame_ts")
        while ffi.C.nanosleep(req, rem) ~= 0 do req, rem = rem, req end
      end)").empty());
    REQUIRE(s.run(scriptprof::test::frame_loop_script(1500)).empty());
    sampler.stop();
    lua_getglobal(s.L, "truth");
    const double truth = lua_tonumber(s.L, -1);
    lua_pop(s.L, 1);
    const Profile& p = sampler.engine().profile();
    FunctionId step = function_named(p, "step"), paint = function_named(p, "paint");
    REQUIRE(step != scriptprof::kNoFunction);
    REQUIRE(paint != scriptprof::kNoFunction);
    const double a = static_cast<double>(p.counts(step).cumulative), b = static_cast<double>(p.counts(paint).cumulative);
    INFO((clock == scriptprof::TimerClock::Cpu ? "cpu" : "wall") << " clock: step " << a << ", paint " << b
                                                                 << " samples; CPU time says " << truth);
    REQUIRE(a + b > 300);
    const double share = a / (a + b), sd = std::sqrt(truth * (1 - truth) / (a + b));
    CHECK(share == Approx(truth).margin(4 * sd + 0.03));
    // thread_cpu, the first code after each wake, takes about 1% of the CPU time. A tick that
    // waited for the thread to block (the watcher stuck behind it on its CPU) lands there: it
    // had a third of the samples.
    const FunctionId wake = function_named(p, "thread_cpu");
    const double w = wake == scriptprof::kNoFunction ? 0 : static_cast<double>(p.counts(wake).cumulative);
    INFO("thread_cpu " << w << " samples");
    CHECK(w / (a + b + w) < 0.06);
  }
}

TEST_CASE("A recursion overflows LuaJIT's stack at the same depth with the sampler on") {
  // Walking a stack at its limit must not push on it: a push there raises "stack overflow"
  // from the sample, a frame before the program's own (C frames are named from LuaJIT's stack
  // dump, never with lua_getinfo's "f"). Samples land in the dive and in the handler, which
  // runs at the limit.
  // The collector is stopped (it shrinks stacks when it runs) and the JIT is off (a compiled
  // recursion's frames differ, and when it compiles moves): in plain LuaJIT either moves the
  // overflow by a frame.
  const char* program = R"(
    collectgarbage("stop")
    jit.off()
    local depth = 0
    local function dive(n) depth = n return 1 + dive(n + 1) end
    local depths = {}
    -- The handler runs at the limit, long enough (a traceback of 20000 frames) for ticks.
    local function handler(m) return m .. " / " .. debug.traceback("tb", 2):sub(1, 40) end
    for round = 1, 12 do
      depth = 0
      local ok, e = xpcall(dive, handler, 1)
      depths[round] = depth .. " " .. tostring(e)
    end
    result = table.concat(depths, ",")
    collectgarbage("restart")
    jit.on()
  )";
  const std::string expected = plain_result(program);
  REQUIRE(expected.find("stack overflow") != std::string::npos);
  State s;
  LuaJitSampler sampler(s.L);
  std::string error;
  REQUIRE(sampler.start(s.L, at_hz(20000), &error));
  REQUIRE(s.run(program).empty());
  sampler.stop();
  lua_getglobal(s.L, "result");
  CHECK(lua_tostring(s.L, -1) == expected);
  CHECK(sampler.engine().profile().sample_weight() > 50);
}

// LuaJIT stops its profiler without asking: lua_close does before any finalizer (the attached
// sampler's own stop among them) runs, and so does a program's jit.profile.stop(). Its SIGPROF
// handler, called by the next tick, then read the VM it no longer had (a crash at 10 kHz in
// about one lua_close in three). The ticks must find it stopped and leave it alone.
TEST_CASE("Ticks after LuaJIT stopped its profiler behind the adapter's back do nothing") {
  {
    State s;
    LuaJitSampler sampler(s.L);
    std::string error;
    REQUIRE(sampler.start(s.L, at_hz(10000), &error));
    REQUIRE(s.run("local x = 0 for i = 1, 3e6 do x = x + i % 7 end").empty());
    REQUIRE(s.run("require('jit.profile').stop()").empty());
    // Ticks keep coming for this loop: none may reach LuaJIT's handler.
    REQUIRE(s.run("local x = 0 for i = 1, 3e7 do x = x + i % 7 end").empty());
    sampler.stop();
    CHECK(sampler.engine().profile().sample_weight() > 0);  // the samples before the stop stay
  }
  struct sigaction before;
  sigaction(SIGPROF, nullptr, &before);
  for (int i = 0; i < 20; ++i) {
    lua_State* L = luaL_newstate();
    luaL_openlibs(L);
    LuaJitSampler* sampler = scriptprof::luajit::attach_sampler(L);
    std::string error;
    REQUIRE(sampler->start(L, at_hz(10000), &error));
    luaL_dostring(L, "local t = {} for i = 1, 2e5 do t[i % 1000 + 1] = {i} end");
    lua_close(L);  // the run still on: lua_close stops LuaJIT's profiler, then the sampler's finalizer runs
  }
  // SIGPROF's action is the program's again, without the bridge's mark.
  struct sigaction after;
  sigaction(SIGPROF, nullptr, &after);
  CHECK(after.sa_handler == before.sa_handler);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) CHECK(sigismember(&after.sa_mask, sig) == sigismember(&before.sa_mask, sig));
}
