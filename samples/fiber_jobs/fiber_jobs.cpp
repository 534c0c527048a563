// A job system on Boost.Context fibers, profiled: two worker threads, each with its own Lua
// state, run many Lua jobs, each job a coroutine on a fiber of its own. A job gives its thread
// to the next one with jobs.wait() (a fiber switch from inside Lua). Every scheduler round is a
// game frame, inside a "frame" zone, with some native work in a "physics" zone.
//
//   fiber_jobs [--profiling profile.csv] [--tree FILE] [--chrome FILE] [--jobs N] [--steps N]
//              [--scripts DIR]   (the folder of ai.lua, path.lua, anim.lua; default: the sources)
//
// Prints the flat report and the frames report, writes a LispWorks tree and a Chrome trace in
// which every fiber is a process/thread, and with --profiling the zones as lms CSV. Exits 1 if
// a fiber is missing from the profile or the files (CI runs it).
extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <boost/context/fiber.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "scriptprof_lua.h"

namespace ctx = boost::context;

namespace {

struct Job {
  std::string name;                 // "worker 1 ai.think #3"
  lua_State* co = nullptr;          // the job's coroutine
  scriptprof_fiber* fiber = nullptr;
  ctx::fiber context;               // the job's stack while it is switched out
  ctx::fiber* scheduler = nullptr;  // the scheduler's, while the job runs
  bool done = false;
  std::string error;
};

thread_local Job* t_running = nullptr;  // the job running on this thread

// jobs.wait(): back to the scheduler; the job resumes here in a later frame.
int job_wait(lua_State*) {
  Job* job = t_running;
  scriptprof_fiber_switch(nullptr);  // the thread's own stack runs next
  *job->scheduler = std::move(*job->scheduler).resume();
  return 0;
}

void physics_step() {
  static const uint32_t zone = scriptprof_zone_id("physics");
  scriptprof_zone_begin(zone);
  volatile double x = 0;
  for (int i = 0; i < 200000; ++i) x = x + std::sqrt(static_cast<double>(i));
  scriptprof_zone_end(zone);
}

struct Worker {
  int index;
  int jobs;
  int steps;
  scriptprof_profiler* profiler;
  std::string scripts;  // folder of the job modules
  std::vector<std::string> fiber_names;
  std::string error;
};

void run_worker(Worker* w) {
  std::string thread_name = "worker " + std::to_string(w->index);
  scriptprof_name_thread(thread_name.c_str());
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  lua_newtable(L);
  lua_pushcfunction(L, job_wait);
  lua_setfield(L, -2, "wait");
  lua_setglobal(L, "jobs");
  // The jobs' modules (ai.lua, path.lua, anim.lua) load with require from the scripts folder.
  lua_getglobal(L, "package");
  lua_pushstring(L, (w->scripts + "/?.lua").c_str());
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  if (scriptprof_attach(w->profiler, L) != SCRIPTPROF_OK || scriptprof_start(w->profiler, L) != SCRIPTPROF_OK) {
    w->error = scriptprof_error();
    lua_close(L);
    return;
  }

  const char* kinds[][2] = {{"ai", "think"}, {"path", "search"}, {"anim", "blend"}};
  std::vector<std::unique_ptr<Job>> jobs;
  for (int i = 0; i < w->jobs; ++i) {
    auto job = std::make_unique<Job>();
    const char* module = kinds[i % 3][0];
    const char* function = kinds[i % 3][1];
    job->name = thread_name + " " + module + "." + function + " #" + std::to_string(i);
    job->co = lua_newthread(L);
    luaL_ref(L, LUA_REGISTRYINDEX);  // the coroutine lives as long as the state
    scriptprof_fiber_create(job->name.c_str(), job->co, &job->fiber);
    w->fiber_names.push_back(job->name);
    Job* j = job.get();
    int steps = w->steps;
    job->context = ctx::fiber([j, L, module, function, steps](ctx::fiber&& scheduler) {
      j->scheduler = &scheduler;
      static const uint32_t zone = scriptprof_zone_id("run job");
      scriptprof_zone_begin(zone);
      lua_getglobal(j->co, "require");
      lua_pushstring(j->co, module);
      int status = lua_pcall(j->co, 1, 1, 0);
      if (status == LUA_OK) {
        lua_getfield(j->co, -1, function);
        lua_replace(j->co, 1);
        lua_settop(j->co, 1);
        lua_pushinteger(j->co, steps);
        // The host resumes the coroutine from C: it tells the profiler so.
        int results = 0;
        scriptprof_enter_coroutine(L, j->co);
        status = lua_resume(j->co, L, 1, &results);
        scriptprof_leave_coroutine(j->co, L);
      }
      if (status != LUA_OK) j->error = lua_tostring(j->co, -1) ? lua_tostring(j->co, -1) : "error";
      scriptprof_zone_end(zone);
      j->done = true;
      scriptprof_fiber_switch(nullptr);
      return std::move(scheduler);
    });
    jobs.push_back(std::move(job));
  }

  const uint32_t frame_zone = scriptprof_zone_id("frame");
  for (bool any = true; any;) {
    scriptprof_zone_begin(frame_zone);
    any = false;
    for (auto& job : jobs) {
      if (job->done) continue;
      any = true;
      t_running = job.get();
      scriptprof_fiber_switch(job->fiber);
      job->context = std::move(job->context).resume();
    }
    physics_step();
    scriptprof_zone_end(frame_zone);
    scriptprof_frame();  // the frame ends
  }
  for (auto& job : jobs)
    if (!job->error.empty()) w->error = job->name + ": " + job->error;
  if (scriptprof_stop(w->profiler, L) != SCRIPTPROF_OK) w->error = scriptprof_error();
  for (auto& job : jobs) scriptprof_fiber_destroy(job->fiber);
  lua_close(L);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string tree = "fiber_jobs.tree", chrome = "fiber_jobs.json", profiling;
  std::string scripts = SCRIPTPROF_FIBER_JOBS_DIR;
  int jobs = 6, steps = 40;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fiber_jobs: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--profiling") profiling = value("--profiling");
    else if (a == "--tree") tree = value("--tree");
    else if (a == "--chrome") chrome = value("--chrome");
    else if (a == "--scripts") scripts = value("--scripts");
    else if (a == "--jobs") jobs = std::atoi(value("--jobs").c_str());
    else if (a == "--steps") steps = std::atoi(value("--steps").c_str());
    else {
      std::fprintf(stderr, "fiber_jobs: unknown option '%s'\nusage: fiber_jobs [--profiling profile.csv] [--tree FILE] [--chrome FILE] [--jobs N] [--steps N] [--scripts DIR]\n", a.c_str());
      return 2;
    }
  }
  if (jobs < 1 || steps < 1) {
    std::fprintf(stderr, "fiber_jobs: --jobs and --steps must be positive\n");
    return 2;
  }

  scriptprof_options options;
  scriptprof_options_init(&options);
  options.hz = 1000;
  options.full_stacks = 1;  // the Chrome trace and the frames report need every sample
  scriptprof_profiler* profiler = nullptr;
  if (scriptprof_create(&options, &profiler) != SCRIPTPROF_OK) {
    std::fprintf(stderr, "fiber_jobs: %s\n", scriptprof_error());
    return 1;
  }
  if (!profiling.empty()) scriptprof_zone_log_start();

  Worker workers[2] = {{1, jobs, steps, profiler, scripts, {}, {}}, {2, jobs, steps, profiler, scripts, {}, {}}};
  std::thread t1(run_worker, &workers[0]), t2(run_worker, &workers[1]);
  t1.join();
  t2.join();
  int status = 0;
  for (const Worker& w : workers)
    if (!w.error.empty()) {
      std::fprintf(stderr, "fiber_jobs: worker %d: %s\n", w.index, w.error.c_str());
      status = 1;
    }

  scriptprof_profile* profile = nullptr;
  if (scriptprof_take_profile(profiler, &profile) != SCRIPTPROF_OK) {
    std::fprintf(stderr, "fiber_jobs: %s\n", scriptprof_error());
    return 1;
  }
  for (const char* style : {"flat", "frames"}) {
    char* text = nullptr;
    if (scriptprof_profile_report(profile, style, &text) == SCRIPTPROF_OK) {
      std::fputs(text, stdout);
      std::fputs("\n", stdout);
      scriptprof_string_free(text);
    }
  }
  if (scriptprof_profile_write(profile, "lispworks", tree.c_str()) != SCRIPTPROF_OK ||
      scriptprof_profile_write(profile, "chrome", chrome.c_str()) != SCRIPTPROF_OK ||
      (!profiling.empty() && scriptprof_zone_log_write(profiling.c_str()) != SCRIPTPROF_OK)) {
    std::fprintf(stderr, "fiber_jobs: %s\n", scriptprof_error());
    return 1;
  }
  std::printf("wrote %s (LispWorks tree) and %s (Chrome trace: chrome://tracing or ui.perfetto.dev)%s%s\n",
              tree.c_str(), chrome.c_str(), profiling.empty() ? "" : " and ", profiling.c_str());

  // Every fiber must be in the profile and in both files.
  std::string tree_text = read_file(tree), chrome_text = read_file(chrome);
  std::size_t fibers = 0;
  for (const Worker& w : workers)
    for (const std::string& name : w.fiber_names) {
      ++fibers;
      if (tree_text.find(name) == std::string::npos || chrome_text.find(name) == std::string::npos) {
        std::fprintf(stderr, "fiber_jobs: fiber '%s' is missing from %s or %s\n", name.c_str(), tree.c_str(), chrome.c_str());
        status = 1;
      }
    }
  std::printf("%zu fibers on 2 threads, %zu processes in the profile, %llu samples\n", fibers,
              scriptprof_profile_processes(profile), static_cast<unsigned long long>(scriptprof_profile_samples(profile)));
  scriptprof_profile_free(profile);
  scriptprof_destroy(profiler);
  return status;
}
