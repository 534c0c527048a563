/* The bare signal under every sampling ratio (suite_bench.py): LD_PRELOAD'ed into a plain
 * interpreter, a thread signals the program's main thread every 1/SCRIPTPROF_FLOOR_HZ seconds
 * with the profiler's default signal (SIGRTMAX-3), whose handler does nothing. What a run at
 * that rate costs before any profiler work: the kernel's delivery and the handler's return.
 * SCRIPTPROF_FLOOR_HZ=0: the thread alone, which never signals: what a second thread costs
 * the program (glibc's malloc takes its arena locks once a process has made a thread).
 * SCRIPTPROF_FLOOR_CPU_HZ instead: no thread; a CPU-time POSIX timer aimed at the main thread
 * signals it every 1/HZ seconds of its CPU time (the kernel checks it at its scheduler tick, so
 * at most ~250 a second here): the floor of a timer that needs no thread, at low rates. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pid_t main_thread;
static long period_ns;

/* Empty: the floor is the delivery itself. */
static void on_signal(int sig) { (void)sig; }

static void* ticker(void* unused) {
  (void)unused;
  if (period_ns == 0)
    for (;;) pause();
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    next.tv_nsec += period_ns;
    while (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      ++next.tv_sec;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    syscall(SYS_tgkill, getpid(), main_thread, SIGRTMAX - 3);
  }
  return NULL;
}

/* The CPU-time timer of SCRIPTPROF_FLOOR_CPU_HZ, armed to repeat every `period` ns. */
static void start_cpu_timer(long period) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGRTMAX - 3;
  ev._sigev_un._tid = main_thread;
  timer_t timer;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &timer) != 0) abort();  /* no floor to measure */
  struct itimerspec every = {{period / 1000000000L, period % 1000000000L}, {period / 1000000000L, period % 1000000000L}};
  timer_settime(timer, 0, &every, NULL);
}

__attribute__((constructor)) static void start_floor(void) {
  const char* hz = getenv("SCRIPTPROF_FLOOR_HZ");
  const char* cpu_hz = getenv("SCRIPTPROF_FLOOR_CPU_HZ");
  if ((!hz || atof(hz) < 0) && (!cpu_hz || atof(cpu_hz) <= 0)) return;
  main_thread = (pid_t)syscall(SYS_gettid);
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGRTMAX - 3, &sa, NULL);
  if (cpu_hz && atof(cpu_hz) > 0) {
    start_cpu_timer((long)(1e9 / atof(cpu_hz)));
    return;
  }
  period_ns = atof(hz) > 0 ? (long)(1e9 / atof(hz)) : 0;
  /* The ticker takes no signal of its own: every one goes to the main thread. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t t;
  pthread_create(&t, NULL, ticker, NULL);
  pthread_detach(t);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}
