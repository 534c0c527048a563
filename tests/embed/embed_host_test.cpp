// The embedding API as a host engine uses it around its runs: the zone log, frame markers,
// coroutines resumed from C, and the errors a host gets for misuse (embed_test.cpp: zones,
// threads, fibers).
// Built and run under ThreadSanitizer too. The Lua work allocates: TSan delivers a signal only
// when the thread next enters its runtime.
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}


#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "embed_helpers.hpp"
#include "scriptprof_lua.h"
#include "scriptprof/interval_formats.hpp"
#include "scriptprof/profile.hpp"
#include "scriptprof/profiler.hpp"
#include "zone_log.hpp"
#include "zones.hpp"


using namespace embed_test;

TEST_CASE("the zone log writes lms CSV exact to the microsecond, mapping lines first, and reads back") {
  scriptprof_zone_log_start();
  uint32_t outer = scriptprof_zone_id("load level"), inner = scriptprof_zone_id("parse, then link");
  scriptprof_zone_begin(outer);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  for (int i = 0; i < 3; ++i) {
    scriptprof_zone_begin(inner);
    std::this_thread::sleep_for(std::chrono::microseconds(700));
    scriptprof_zone_end(inner);
  }
  scriptprof_zone_end(outer);
  std::vector<scriptprof::native::ZoneEvent> events = scriptprof::native::zone_log_events();
  REQUIRE(events.size() == 8);
  std::string path = "embed_zones.csv";
  REQUIRE(scriptprof_zone_log_write(path.c_str()) == SCRIPTPROF_OK);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  // Every mapping line comes before the first begin or end.
  bool timed = false;
  std::string line;
  for (std::istringstream lines(text.str()); std::getline(lines, line);) {
    if (line.rfind("2,", 0) == 0) CHECK_FALSE(timed);
    else timed = true;
  }
  std::vector<scriptprof::LmsInterval> intervals;
  std::string error;
  REQUIRE(scriptprof::read_lms_intervals(text.str(), &intervals, &error));
  REQUIRE(intervals.size() == 4);
  auto us = [](std::uint64_t ns) { return (ns + 500) / 1000; };
  // Ends come in order: the three inner intervals, then the outer one.
  for (int i = 0; i < 3; ++i) {
    CHECK(intervals[i].name == "parse, then link");
    CHECK(intervals[i].begin_us == us(events[1 + 2 * i].t_ns));
    CHECK(intervals[i].end_us == us(events[2 + 2 * i].t_ns));
    CHECK(intervals[i].end_us - intervals[i].begin_us >= 700);
  }
  CHECK(intervals[3].name == "load level");
  CHECK(intervals[3].begin_us == us(events[0].t_ns));
  CHECK(intervals[3].end_us == us(events[7].t_ns));
  // The profile reader takes it too (one thread, properly nested).
  scriptprof_profile* back = nullptr;
  REQUIRE(scriptprof_profile_read(path.c_str(), "lms", &back) == SCRIPTPROF_OK);
  CHECK(scriptprof_profile_samples(back) == intervals[3].end_us - intervals[3].begin_us);
  scriptprof_profile_free(back);
  scriptprof::native::stop_zone_log();
}

TEST_CASE("frame markers: the frames report shows the average and the slowest frames") {
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = 1000;
  o.wall_clock = 1;
  o.full_stacks = 1;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_start(p, nullptr) == SCRIPTPROF_OK);
  uint32_t update = scriptprof_zone_id("update"), stall = scriptprof_zone_id("stall");
  for (int frame = 0; frame < 6; ++frame) {  // a mark ends each frame: the first began at the start
    scriptprof_zone_begin(update);
    spin_native(0.005);
    if (frame == 3) {
      scriptprof_zone_begin(stall);
      spin_native(0.060);
      scriptprof_zone_end(stall);
    }
    scriptprof_zone_end(update);
    scriptprof_frame();
  }
  REQUIRE(scriptprof_stop(p, nullptr) == SCRIPTPROF_OK);
  scriptprof_profile* prof = nullptr;
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(core(prof).frame_marks.size() == 6);
  char* text = nullptr;
  REQUIRE(scriptprof_profile_report(prof, "frames", &text) == SCRIPTPROF_OK);
  std::string report = text;
  scriptprof_string_free(text);
  INFO(report);
  CHECK(report.find("6 frames") != std::string::npos);
  // The slowest frame (the fourth, 1-based) is listed first, with the stall on top of its stack.
  std::istringstream lines(report);
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  std::getline(lines, line);
  std::istringstream first(line);
  int rank = 0, index = 0;
  first >> rank >> index;
  CHECK(rank == 1);
  CHECK(index == 4);
  CHECK(line.find("stall (zone)") != std::string::npos);
  // Asked for the two slowest: the stall frame and one more, nothing else.
  REQUIRE(scriptprof_profile_frames(prof, 2, &text) == SCRIPTPROF_OK);
  std::string two = text;
  scriptprof_string_free(text);
  INFO(two);
  std::istringstream rows(two);
  std::vector<std::string> lines2;
  while (std::getline(rows, line)) lines2.push_back(line);
  REQUIRE(lines2.size() == 4);  // title, column header, two frames
  int rank2 = 0;
  std::istringstream(lines2[3]) >> rank2;
  CHECK(rank2 == 2);
  CHECK(two.find("stall (zone)") != std::string::npos);
  CHECK(scriptprof_profile_frames(nullptr, 2, &text) == SCRIPTPROF_INVALID_ARGUMENT);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
}

TEST_CASE("a coroutine resumed from C is sampled as the coroutine once the host says so") {
  lua_State* L = new_state("function in_co(s) think(s) end");
  scriptprof_profiler* p = new_profiler(1000);
  attach_and_start(p, L);
  lua_State* co = lua_newthread(L);
  lua_getglobal(co, "in_co");
  lua_pushnumber(co, 0.3);
  int nres = 0;
  scriptprof_enter_coroutine(L, co);
  REQUIRE(lua_resume(co, L, 1, &nres) == LUA_OK);
  scriptprof_leave_coroutine(co, L);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  scriptprof_profile* prof = nullptr;
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(weight_under(core(prof), "in_co") > 100);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

TEST_CASE("start failures say whose they are: the caller's state or the system's") {
  // The caller's: a state that reached max_samples starts again only after a reset.
  scriptprof_profiler* p = new_profiler(1000, false, 5);
  lua_State* L = new_state();
  attach_and_start(p, L);
  call_global(L, "think", 0.05);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  CHECK(scriptprof_start(p, L) == SCRIPTPROF_INVALID_STATE);
  CHECK(std::string(scriptprof_error()).find("max_samples (5)") != std::string::npos);
  REQUIRE(scriptprof_reset(p) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_start(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);

  // The system's: with no room for a queued signal the timer could deliver no tick.
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_SIGPENDING, &saved) == 0);
  rlimit none = saved;
  none.rlim_cur = 0;
  REQUIRE(setrlimit(RLIMIT_SIGPENDING, &none) == 0);
  scriptprof_status lua_start = scriptprof_start(p, L);
  std::string lua_message = scriptprof_error();
  scriptprof_status native_start = scriptprof_start(p, nullptr);
  std::string native_message = scriptprof_error();
  REQUIRE(setrlimit(RLIMIT_SIGPENDING, &saved) == 0);
  CHECK(lua_start == SCRIPTPROF_SYSTEM_ERROR);
  CHECK(lua_message.rfind("scriptprof_start: ", 0) == 0);
  CHECK(lua_message.find("RLIMIT_SIGPENDING") != std::string::npos);
  CHECK(native_start == SCRIPTPROF_SYSTEM_ERROR);
  CHECK(native_message.rfind("scriptprof_start: ", 0) == 0);
  CHECK(native_message.find("RLIMIT_SIGPENDING") != std::string::npos);
  // Nothing was left half-started: both start normally now.
  REQUIRE(scriptprof_start(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

// The option table's `signal`, through the C API: the timer delivers with the signal asked for,
// and one the process cannot take is refused, naming the option.
TEST_CASE("a host chooses the timer's signal, and a bad one is refused by name") {
  scriptprof_options o;
  scriptprof_options_init(&o);
  CHECK(o.signal == nullptr);
  o.hz = 1000;
  o.signal = "SIGKILL";
  scriptprof_profiler* p = nullptr;
  CHECK(scriptprof_create(&o, &p) == SCRIPTPROF_INVALID_ARGUMENT);
  CHECK(p == nullptr);
  CHECK(std::string(scriptprof_error()).find("signal") != std::string::npos);
  CHECK(std::string(scriptprof_error()).find("SIGKILL") != std::string::npos);
  o.signal = "SIGRTMIN+2";
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  lua_State* L = new_state();
  attach_and_start(p, L);
  struct sigaction now;
  REQUIRE(sigaction(SIGRTMIN + 2, nullptr, &now) == 0);
  CHECK((now.sa_flags & SA_SIGINFO) != 0);  // the timer's handler took it
  call_global(L, "think", 0.1);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  scriptprof_profile* prof = take_checked(p);
  CHECK(scriptprof_profile_samples(prof) > 30);  // 100 ms at 1 kHz came through it
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

TEST_CASE("misuse gets a status and a message naming what is wrong") {
  lua_State* L = new_state();
  scriptprof_profiler* p = nullptr;
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = -5;
  CHECK(scriptprof_create(&o, &p) == SCRIPTPROF_INVALID_ARGUMENT);
  CHECK(std::string(scriptprof_error()).find("hz") != std::string::npos);
  p = new_profiler(100);
  CHECK(scriptprof_start(p, L) == SCRIPTPROF_INVALID_STATE);
  CHECK(std::string(scriptprof_error()).find("not attached") != std::string::npos);
  CHECK(scriptprof_stop(p, L) == SCRIPTPROF_INVALID_STATE);
  attach_and_start(p, L);
  CHECK(scriptprof_start(p, L) == SCRIPTPROF_INVALID_STATE);
  CHECK(std::string(scriptprof_error()).find("already started") != std::string::npos);
  CHECK(scriptprof_start(p, nullptr) == SCRIPTPROF_INVALID_STATE);  // one session per thread
  CHECK(std::string(scriptprof_error()).find("this thread already samples lua_State") != std::string::npos);
  scriptprof_profile* prof = nullptr;
  CHECK(scriptprof_take_profile(p, &prof) == SCRIPTPROF_INVALID_STATE);
  CHECK(prof == nullptr);
  // Another thread can neither stop this thread's run nor destroy the profiler under it.
  scriptprof_status other_stop = SCRIPTPROF_OK, other_destroy = SCRIPTPROF_OK;
  std::string other_message;
  std::thread([&] {
    other_stop = scriptprof_stop(p, L);
    other_message = scriptprof_error();
    other_destroy = scriptprof_destroy(p);
  }).join();
  CHECK(other_stop == SCRIPTPROF_INVALID_STATE);
  CHECK(other_message.find("another thread") != std::string::npos);
  CHECK(other_destroy == SCRIPTPROF_INVALID_STATE);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(scriptprof_profile_write(prof, "pdf", "x.pdf") == SCRIPTPROF_INVALID_ARGUMENT);
  CHECK(std::string(scriptprof_error()).find("lispworks") != std::string::npos);  // lists the known ones
  CHECK(scriptprof_profile_write(prof, "folded", "/nonexistent-dir/p.folded") == SCRIPTPROF_IO_ERROR);
  CHECK(std::string(scriptprof_error()).find("/nonexistent-dir/p.folded") != std::string::npos);
  char* text = nullptr;
  CHECK(scriptprof_profile_report(prof, "fancy", &text) == SCRIPTPROF_INVALID_ARGUMENT);
  CHECK(text == nullptr);
  scriptprof_profile_free(prof);
  scriptprof_profile* unread = nullptr;
  CHECK(scriptprof_profile_read("/nonexistent-file.tree", nullptr, &unread) == SCRIPTPROF_IO_ERROR);
  CHECK(unread == nullptr);
  CHECK(std::string(scriptprof_error()).find("/nonexistent-file.tree") != std::string::npos);
  CHECK(scriptprof_attach(nullptr, L) == SCRIPTPROF_INVALID_ARGUMENT);
  // A mismatched zone end is ignored and counted, never corrupting the stack.
  std::uint64_t before = scriptprof::native::zone_mismatches();
  uint32_t a = scriptprof_zone_id("a"), b = scriptprof_zone_id("b");
  scriptprof_zone_begin(a);
  scriptprof_zone_end(b);
  CHECK(scriptprof::native::zone_mismatches() == before + 1);
  CHECK(scriptprof::native::current_fiber()->depth == 1);
  scriptprof_zone_end(a);
  CHECK(scriptprof::native::current_fiber()->depth == 0);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

// What a profiler collected is its own: the sampler belongs to the state and outlives it, and a
// second profiler on the state once got the first one's samples back.
TEST_CASE("a second profiler on a state starts empty - the first one keeps its samples") {
  lua_State* L = new_state();
  scriptprof_profiler* first = new_profiler(1000);
  attach_and_start(first, L);
  call_global(L, "think", 0.1);
  REQUIRE(scriptprof_stop(first, L) == SCRIPTPROF_OK);
  scriptprof_profile* mine = take_checked(first);
  const unsigned long long first_samples = scriptprof_profile_samples(mine);
  CHECK(first_samples > 20);
  REQUIRE(scriptprof_destroy(first) == SCRIPTPROF_OK);
  scriptprof_profiler* second = new_profiler(1000);
  attach_and_start(second, L);
  REQUIRE(scriptprof_stop(second, L) == SCRIPTPROF_OK);  // no work: at most the tick due meanwhile
  scriptprof_profile* theirs = take_checked(second);
  CHECK(scriptprof_profile_samples(theirs) <= 1);
  CHECK(scriptprof_profile_samples(mine) == first_samples);  // taken before: unchanged
  scriptprof_profile_free(theirs);
  scriptprof_profile_free(mine);
  REQUIRE(scriptprof_destroy(second) == SCRIPTPROF_OK);
  lua_close(L);
}

namespace {
lua_Alloc g_next_alloc;
void* g_next_ud;
unsigned long g_wrapped;
void* host_wrapper(void*, void* p, std::size_t o, std::size_t n) {
  ++g_wrapped;
  return g_next_alloc(g_next_ud, p, o, n);
}
}  // namespace

// The host wraps the allocator while the profiler's wrapper is in place, then destroys the
// profiler and closes the state: lua_close still calls through the profiler's wrapper after the
// sampler is gone (a use after free before; the sanitizer build catches its return).
TEST_CASE("a host wrapping the allocator mid-run - then closing the state - touches nothing freed") {
  lua_State* L = new_state();
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = 1000;
  o.count_calls = 1;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  attach_and_start(p, L);
  call_global(L, "think", 0.02);
  g_next_alloc = lua_getallocf(L, &g_next_ud);
  lua_setallocf(L, host_wrapper, nullptr);
  g_wrapped = 0;
  REQUIRE(luaL_dostring(L, "local t = {} for i = 1, 20000 do t[i % 100] = {i, tostring(i)} end") == LUA_OK);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  REQUIRE(luaL_dostring(L, "local t = {} for i = 1, 2000 do t[i] = {} end") == LUA_OK);  // the sampler lives on in L
  lua_close(L);
  CHECK(g_wrapped > 1000);  // the host's wrapper saw the program's allocations throughout
}
