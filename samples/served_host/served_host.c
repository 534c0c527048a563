/* A C host serving profiles while it runs: two worker threads, each with its own lua_State,
   run a script whose `hot` does three times `cold`'s work. Ask it from another shell:

     build/bin/served_host 127.0.0.1:6060 &
     go tool pprof -top http://127.0.0.1:6060/debug/pprof/profile?seconds=5
     go tool pprof -tags http://127.0.0.1:6060/debug/pprof/profile?seconds=5   (a thread each)

   It runs until the file argv[2] exists (default: 60 s), then prints each worker's result
   (the same value every round, profiled or not) and exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "scriptprof_lua.h"

static const char* script =
    "local function hot(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end\n"
    "local function cold(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end\n"
    "function round() return hot(300000) + cold(100000) end\n";

static scriptprof_profiler* profiler;
static const char* stop_file;
static time_t deadline;
/* Workers that attached (or gave up): the address is printed once both did, so that whoever
   reads it finds something to profile (a request before any state is attached gets 503). */
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int workers_ready;

static void worker_ready(void) {
  pthread_mutex_lock(&ready_lock);
  ++workers_ready;
  pthread_cond_broadcast(&ready_cond);
  pthread_mutex_unlock(&ready_lock);
}

struct worker {
  int index;
  long long result;
  int ok;
};

static int stop_asked(void) { return (stop_file && access(stop_file, F_OK) == 0) || time(NULL) > deadline; }

static void* run_worker(void* arg) {
  struct worker* w = arg;
  char name[32];
  snprintf(name, sizeof name, "worker %d", w->index);
  scriptprof_name_thread(name);
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_dostring(L, script) != LUA_OK) {
    worker_ready();
    return NULL;
  }
  if (scriptprof_attach(profiler, L) != SCRIPTPROF_OK || scriptprof_start(profiler, L) != SCRIPTPROF_OK) {
    fprintf(stderr, "served_host: %s\n", scriptprof_error());
    worker_ready();
    return NULL;
  }
  w->ok = 1;
  worker_ready();
  while (!stop_asked()) {
    lua_getglobal(L, "round");
    if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
      w->ok = 0;
      break;
    }
    long long v = (long long)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (w->result && v != w->result) w->ok = 0; /* every round computes the same */
    w->result = v;
  }
  scriptprof_stop(profiler, L);
  scriptprof_detach(profiler, L);
  lua_close(L);
  return NULL;
}

int main(int argc, char** argv) {
  const char* address = argc > 1 ? argv[1] : "127.0.0.1:6060";
  stop_file = argc > 2 ? argv[2] : NULL;
  deadline = time(NULL) + 60;
  scriptprof_options options;
  scriptprof_options_init(&options);
  options.hz = 1000; /* a request without hz= samples at this rate */
  if (scriptprof_create(&options, &profiler) != SCRIPTPROF_OK || scriptprof_serve(profiler, address) != SCRIPTPROF_OK) {
    fprintf(stderr, "served_host: %s\n", scriptprof_error());
    return 1;
  }
  struct worker workers[2] = {{1, 0, 0}, {2, 0, 0}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, run_worker, &workers[i]);
  pthread_mutex_lock(&ready_lock);
  while (workers_ready < 2) pthread_cond_wait(&ready_cond, &ready_lock);
  pthread_mutex_unlock(&ready_lock);
  fprintf(stderr, "served_host: serving profiles at http://%s/debug/pprof/\n", scriptprof_serving_address(profiler));
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  scriptprof_stop_serving(profiler);
  scriptprof_destroy(profiler);
  for (int i = 0; i < 2; ++i) printf("worker %d result %lld\n", workers[i].index, workers[i].result);
  return workers[0].ok && workers[1].ok ? 0 : 1;
}
