// The embedding API (scriptprof.h) driven as a host engine would: zones around Lua calls and
// native work, several threads with their own states, fibers on Boost.Context, the zone log,
// frame markers, coroutines resumed from C, and the errors a host gets for misuse.
// Built and run under ThreadSanitizer too. The Lua work allocates: TSan delivers a signal only
// when the thread next enters its runtime.
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <boost/context/fiber.hpp>

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

#include "scriptprof_lua.h"
#include "scriptprof/interval_formats.hpp"
#include "scriptprof/profile.hpp"
#include "scriptprof/profiler.hpp"
#include "zone_log.hpp"
#include "zones.hpp"

namespace ctx = boost::context;

namespace {

// The profile behind the C handle (the tests check it through the core's vocabulary).
const scriptprof::Profile& core(const scriptprof_profile* p) { return scriptprof::profile_of(p); }

const char* kScript = R"(
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

lua_State* new_state(const char* extra = "") {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  REQUIRE(luaL_dostring(L, kScript) == LUA_OK);
  lua_pop(L, 1);
  if (*extra) REQUIRE(luaL_dostring(L, extra) == LUA_OK);
  return L;
}

void call_global(lua_State* L, const char* name, double seconds) {
  lua_getglobal(L, name);
  lua_pushnumber(L, seconds);
  REQUIRE(lua_pcall(L, 1, 0, 0) == LUA_OK);
}

void spin_native(double seconds) {
  timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  std::vector<std::string> junk;
  do {
    junk.emplace_back(64, 'x');  // allocates (see the TSan note above)
    if (junk.size() > 64) junk.clear();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while (static_cast<double>(t.tv_sec - t0.tv_sec) + static_cast<double>(t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
}

scriptprof_profiler* new_profiler(double hz, bool full_stacks = false) {
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = hz;
  o.full_stacks = full_stacks;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  return p;
}

// Attaches L and starts it on the calling thread.
void attach_and_start(scriptprof_profiler* p, lua_State* L) {
  REQUIRE(scriptprof_attach(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_start(p, L) == SCRIPTPROF_OK);
}

// Every thread's profile merged (all stopped), its invariants checked.
scriptprof_profile* take_checked(scriptprof_profiler* p) {
  scriptprof_profile* prof = nullptr;
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(scriptprof::check_invariants(core(prof)).empty());
  return prof;
}

std::vector<std::string> labels(const scriptprof::Profile& p, const std::vector<scriptprof::FunctionId>& stack) {
  std::vector<std::string> out;
  for (auto f : stack) out.push_back(p.functions.label(f));
  return out;
}

// Weight per root-first stack of labels, per process.
std::map<std::uint32_t, std::map<std::vector<std::string>, std::uint64_t>> stacks(const scriptprof::Profile& p) {
  std::map<std::uint32_t, std::map<std::vector<std::string>, std::uint64_t>> out;
  scriptprof::for_each_sample_path(p, [&](std::uint32_t thread, const scriptprof::CallTreeNode& node,
                                          const std::vector<scriptprof::FunctionId>& stack) {
    out[thread][labels(p, stack)] += node.self;
  });
  return out;
}

bool contains(const std::vector<std::string>& stack, const std::string& prefix) {
  for (const auto& f : stack)
    if (f.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("zones are the outer frames of Lua samples taken inside them") {
  lua_State* L = new_state();
  scriptprof_profiler* p = new_profiler(1000);
  attach_and_start(p, L);
  uint32_t frame = scriptprof_zone_id("frame"), ai = scriptprof_zone_id("update_ai");
  scriptprof_zone_begin(frame);
  scriptprof_zone_begin(ai);
  call_global(L, "think", 0.3);
  scriptprof_zone_end(ai);
  call_global(L, "plan", 0.2);
  scriptprof_zone_end(frame);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  scriptprof_profile* prof = take_checked(p);
  const scriptprof::Profile& pr = core(prof);
  std::uint64_t think = 0, plan = 0;
  for (const auto& [process, by_stack] : stacks(pr))
    for (const auto& [stack, w] : by_stack) {
      if (contains(stack, "think")) {
        think += w;
        REQUIRE(stack.size() >= 3);
        CHECK(stack[0] == "frame (zone)");
        CHECK(stack[1] == "update_ai (zone)");
        CHECK(stack[2].rfind("think", 0) == 0);
      }
      if (contains(stack, "plan")) {
        plan += w;
        CHECK(stack[0] == "frame (zone)");
        CHECK(!contains(stack, "update_ai"));
      }
    }
  CHECK(think > 50);
  CHECK(plan > 30);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

TEST_CASE("native work is sampled as its zones: on a native-only thread and outside Lua") {
  lua_State* L = new_state();
  scriptprof_profiler* p = new_profiler(1000);
  attach_and_start(p, L);
  uint32_t render = scriptprof_zone_id("render"), cull = scriptprof_zone_id("cull");
  scriptprof_zone_begin(render);
  spin_native(0.2);  // no Lua runs: these ticks must not wait for the next Lua instruction
  scriptprof_zone_begin(cull);
  spin_native(0.1);
  scriptprof_zone_end(cull);
  scriptprof_zone_end(render);
  call_global(L, "think", 0.1);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);

  // A second thread with no Lua at all.
  std::thread native([&] {
    scriptprof_name_thread("physics thread");
    REQUIRE(scriptprof_start(p, nullptr) == SCRIPTPROF_OK);
    uint32_t physics = scriptprof_zone_id("physics");
    scriptprof_zone_begin(physics);
    spin_native(0.2);
    scriptprof_zone_end(physics);
    REQUIRE(scriptprof_stop(p, nullptr) == SCRIPTPROF_OK);
  });
  native.join();

  scriptprof_profile* prof = take_checked(p);
  const scriptprof::Profile& pr = core(prof);
  auto by_process = stacks(pr);
  REQUIRE(by_process.size() == 2);
  std::uint64_t render_only = 0, render_cull = 0, think = 0, physics = 0;
  for (const auto& [process, by_stack] : by_process)
    for (const auto& [stack, w] : by_stack) {
      if (stack == std::vector<std::string>{"render (zone)"}) render_only += w;
      if (stack == std::vector<std::string>{"render (zone)", "cull (zone)"}) render_cull += w;
      if (contains(stack, "think")) {
        think += w;
        CHECK(!contains(stack, "render"));
      }
      if (stack == std::vector<std::string>{"physics (zone)"}) {
        physics += w;
        CHECK(scriptprof::thread_name(pr, process) == "physics thread");
      }
    }
  // 200, 100, 100 and 200 ticks of CPU time at 1 kHz; wide bounds for a loaded machine.
  CHECK(render_only > 100);
  CHECK(render_cull > 50);
  CHECK(render_only > render_cull);
  CHECK(think > 40);
  CHECK(think < 200);  // the native ticks were not handed to Lua
  CHECK(physics > 100);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

extern "C" long neutral_host_run(void);  // neutral_host.c: C, scriptprof.h only

TEST_CASE("a host without Lua uses scriptprof.h alone: its thread is sampled as its zones") {
  long samples = neutral_host_run();
  CHECK(samples > 50);  // 100 ticks of CPU time at 1 kHz; wide bounds for a loaded machine
}

TEST_CASE("max_samples holds for a native-only thread as for Lua: one engine, one limit") {
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = 1000;
  o.max_samples = 5;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  std::thread native([&] {
    REQUIRE(scriptprof_start_thread(p) == SCRIPTPROF_OK);  // scriptprof.h's neutral call
    uint32_t step = scriptprof_zone_id("step");
    for (int i = 0; i < 40; ++i) {  // ~40 samples' worth of zone changes at 1 kHz
      scriptprof_zone_begin(step);
      spin_native(0.003);
      scriptprof_zone_end(step);
    }
    REQUIRE(scriptprof_stop_thread(p) == SCRIPTPROF_OK);
  });
  native.join();
  scriptprof_profile* prof = take_checked(p);
  const scriptprof::Profile& pr = core(prof);
  CHECK(pr.health.samples_taken == 5);
  CHECK(pr.health.limit_reached);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
}

TEST_CASE("threads with their own states: every sample lands on its own thread's process") {
  constexpr int kThreads = 3;
  scriptprof_profiler* p = new_profiler(1000, true);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      std::string name = "work" + std::to_string(i);
      std::string code = "function " + name + "(s) think(s) end";
      lua_State* L = luaL_newstate();
      luaL_openlibs(L);
      if (luaL_dostring(L, kScript) != LUA_OK || luaL_dostring(L, code.c_str()) != LUA_OK) {
        errors[i] = "script failed";
        return;
      }
      scriptprof_name_thread(("worker " + std::to_string(i)).c_str());
      if (scriptprof_attach(p, L) != SCRIPTPROF_OK || scriptprof_start(p, L) != SCRIPTPROF_OK) {
        errors[i] = scriptprof_error();
        return;
      }
      for (int round = 0; round < 3; ++round) {
        lua_getglobal(L, name.c_str());
        lua_pushnumber(L, 0.1);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) errors[i] = lua_tostring(L, -1);
      }
      if (scriptprof_stop(p, L) != SCRIPTPROF_OK) errors[i] = scriptprof_error();
      lua_close(L);  // the profile outlives the state
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e.empty());
  scriptprof_profile* prof = take_checked(p);
  const scriptprof::Profile& pr = core(prof);
  auto by_process = stacks(pr);
  REQUIRE(by_process.size() == kThreads);
  std::set<std::string> names;
  for (const auto& [process, by_stack] : by_process) {
    std::string name = scriptprof::thread_name(pr, process);
    names.insert(name);
    std::string own = "work" + name.substr(name.size() - 1);
    std::uint64_t mine = 0;
    for (const auto& [stack, w] : by_stack) {
      for (int i = 0; i < kThreads; ++i) {
        std::string work = "work" + std::to_string(i);
        if (work != own) CHECK_FALSE(contains(stack, work));  // another thread's function
      }
      if (contains(stack, own)) mine += w;
    }
    CHECK(mine > 40);  // os.clock() is process CPU time: three threads on two cores share it
  }
  CHECK(names == std::set<std::string>{"worker 0", "worker 1", "worker 2"});
  CHECK(scriptprof_profile_processes(prof) == kThreads);
  // Each thread is a process of the LispWorks tree and a thread of the Chrome trace.
  char* text = nullptr;
  REQUIRE(scriptprof_profile_report(prof, "flat", &text) == SCRIPTPROF_OK);
  scriptprof_string_free(text);
  std::string dir = "embed_threads_out";
  std::system(("mkdir -p " + dir).c_str());
  REQUIRE(scriptprof_profile_write(prof, "lispworks", (dir + "/threads.tree").c_str()) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_profile_write(prof, "chrome", (dir + "/threads.json").c_str()) == SCRIPTPROF_OK);
  std::ifstream tree(dir + "/threads.tree"), chrome(dir + "/threads.json");
  std::stringstream tree_text, chrome_text;
  tree_text << tree.rdbuf();
  chrome_text << chrome.rdbuf();
  for (int i = 0; i < kThreads; ++i) {
    CHECK(tree_text.str().find("worker " + std::to_string(i)) != std::string::npos);
    CHECK(chrome_text.str().find("worker " + std::to_string(i)) != std::string::npos);
  }
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
}

namespace {

// A tiny job system: fibers on one thread, each running a Lua coroutine; jobs call
// yield_job() (a C function) to give the thread to the next fiber.
struct Job {
  scriptprof_fiber* fiber = nullptr;
  lua_State* co = nullptr;
  ctx::fiber context;       // the job's suspended stack
  ctx::fiber* back = nullptr;  // the scheduler, while the job runs
  bool done = false;
};
Job* g_running_job = nullptr;

int yield_job(lua_State*) {
  Job* job = g_running_job;
  scriptprof_fiber_switch(nullptr);  // back to the thread's own stack
  *job->back = std::move(*job->back).resume();
  return 0;
}

}  // namespace

TEST_CASE("fibers: samples go to the fiber that runs, each a process of its own") {
  lua_State* L = new_state(R"(
    function job1(n) for i = 1, n do think(0.01) yield_job() end end
    function job2(n) for i = 1, n do plan(0.01) yield_job() end end
  )");
  lua_register(L, "yield_job", yield_job);
  scriptprof_profiler* p = new_profiler(1000, true);
  attach_and_start(p, L);
  Job jobs[2];
  const char* names[2] = {"job1", "job2"};
  for (int i = 0; i < 2; ++i) {
    Job& job = jobs[i];
    job.co = lua_newthread(L);
    lua_setfield(L, LUA_REGISTRYINDEX, names[i]);  // keeps the coroutine alive
    REQUIRE(scriptprof_fiber_create(names[i], job.co, &job.fiber) == SCRIPTPROF_OK);
    job.context = ctx::fiber([&job, name = names[i], L](ctx::fiber&& scheduler) {
      job.back = &scheduler;
      lua_getglobal(job.co, name);
      lua_pushinteger(job.co, 20);
      int nres = 0;
      scriptprof_enter_coroutine(L, job.co);
      int status = lua_resume(job.co, L, 1, &nres);
      scriptprof_leave_coroutine(job.co, L);
      CHECK(status == LUA_OK);
      job.done = true;
      scriptprof_fiber_switch(nullptr);
      return std::move(scheduler);
    });
  }
  for (bool any = true; any;) {
    any = false;
    for (Job& job : jobs) {
      if (job.done) continue;
      any = true;
      g_running_job = &job;
      scriptprof_fiber_switch(job.fiber);
      job.context = std::move(job.context).resume();
    }
  }
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  scriptprof_profile* prof = take_checked(p);
  const scriptprof::Profile& pr = core(prof);
  std::map<std::string, std::uint64_t> own;
  for (const auto& [process, by_stack] : stacks(pr)) {
    std::string name = scriptprof::thread_name(pr, process);
    for (const auto& [stack, w] : by_stack) {
      if (name == "job1") CHECK_FALSE(contains(stack, "plan"));
      if (name == "job2") CHECK_FALSE(contains(stack, "think"));
      if ((name == "job1" && contains(stack, "think")) || (name == "job2" && contains(stack, "plan"))) own[name] += w;
    }
  }
  CHECK(own["job1"] > 100);
  CHECK(own["job2"] > 100);
  scriptprof_profile_free(prof);
  for (Job& job : jobs) scriptprof_fiber_destroy(job.fiber);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

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
  for (int frame = 0; frame < 6; ++frame) {
    scriptprof_frame();
    scriptprof_zone_begin(update);
    spin_native(0.005);
    if (frame == 3) {
      scriptprof_zone_begin(stall);
      spin_native(0.060);
      scriptprof_zone_end(stall);
    }
    scriptprof_zone_end(update);
  }
  scriptprof_frame();
  REQUIRE(scriptprof_stop(p, nullptr) == SCRIPTPROF_OK);
  scriptprof_profile* prof = nullptr;
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(core(prof).frame_marks.size() == 7);
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
  std::uint64_t in_co = 0;
  for (const auto& [process, by_stack] : stacks(core(prof)))
    for (const auto& [stack, w] : by_stack)
      if (contains(stack, "in_co")) in_co += w;
  CHECK(in_co > 100);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
  lua_close(L);
}

TEST_CASE("start failures say whose they are: the caller's state or the system's") {
  // The caller's: a state that reached max_samples starts again only after a reset.
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = 1000;
  o.max_samples = 5;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  lua_State* L = new_state();
  attach_and_start(p, L);
  call_global(L, "think", 0.05);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  CHECK(scriptprof_start(p, L) == SCRIPTPROF_INVALID_STATE);
  CHECK(std::string(scriptprof_error()).find("max_samples (5)") != std::string::npos);
  REQUIRE(scriptprof_reset(p) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_start(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);

  // The system's: with no room for a pending signal the kernel refuses the POSIX timer.
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
  CHECK(lua_message.find("timer_create") != std::string::npos);
  CHECK(native_start == SCRIPTPROF_SYSTEM_ERROR);
  CHECK(native_message.rfind("scriptprof_start: ", 0) == 0);
  CHECK(native_message.find("timer_create") != std::string::npos);
  // Nothing was left half-started: both start normally now.
  REQUIRE(scriptprof_start(p, L) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
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
