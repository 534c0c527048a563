/* A host with no Lua at all: scriptprof.h alone compiles as C without lua.h, and samples the
   calling thread's zones. */
#include "scriptprof.h"

#include <time.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Profiles 0.1 s of CPU in a zone at 1 kHz; returns the samples taken, or -1 on a failure. */
long neutral_host_run(void) {
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = 1000;
  scriptprof_profiler* p = NULL;
  if (scriptprof_create(&o, &p) != SCRIPTPROF_OK) return -1;
  if (scriptprof_start_thread(p) != SCRIPTPROF_OK) return -1;
  uint32_t work = scriptprof_zone_id("work");
  scriptprof_zone_begin(work);
  volatile unsigned long x = 0;
  double end = cpu_seconds() + 0.1;
  while (cpu_seconds() < end)
    for (int i = 0; i < 10000; ++i) x = x + (unsigned long)i;
  scriptprof_zone_end(work);
  if (scriptprof_stop_thread(p) != SCRIPTPROF_OK) return -1;
  scriptprof_profile* prof = NULL;
  if (scriptprof_take_profile(p, &prof) != SCRIPTPROF_OK) return -1;
  long n = (long)scriptprof_profile_samples(prof);
  scriptprof_profile_free(prof);
  scriptprof_destroy(p);
  return n;
}
