// build/bin/scriptprof_timer_floor [--quick]: what a timer signal costs before any profiling,
// the floor under every sampling overhead bench.lua prints.
// A CPU-bound loop runs plain and under (a) a bare SIGEV_THREAD_ID timer with an empty handler
// and (b) scriptprof's SamplingTimer with a handler that takes no sample, interleaved, at
// 100, 1000 and 10000 Hz; prints the median ratios and the cost per signal, then how many
// sleeps of a frame loop a tick cuts short on each clock.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "scriptprof/sampling_timer.hpp"

#include "../../tests/core/frame_sleeps.hpp"
#include "quick_flag.hpp"

namespace {

std::atomic<unsigned long> g_signals{0};

// Async-signal-safe: one lock-free atomic increment.
void empty_handler(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

// Runs in signal context through SamplingTimer: one lock-free atomic increment.
void count_ticks(void*, std::uint64_t, std::uint64_t, std::uint64_t) { g_signals.fetch_add(1, std::memory_order_relaxed); }

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double spin(unsigned long n) {
  double t0 = cpu_seconds();
  volatile unsigned long x = 0;
  for (unsigned long i = 0; i < n; ++i) x = x + i;
  return cpu_seconds() - t0;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

struct BareTimer {
  timer_t id{};
  bool start(long hz) {
    sigevent sev{};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
    if (timer_create(CLOCK_MONOTONIC, &sev, &id) != 0) return false;
    itimerspec its{};
    its.it_interval.tv_sec = 0;
    its.it_interval.tv_nsec = 1'000'000'000L / hz;
    its.it_value = its.it_interval;
    return timer_settime(id, 0, &its, nullptr) == 0;
  }
  void stop() { timer_delete(id); }
};

// The frame loop at 1 kHz (frame_sleeps.hpp): how many sleeps a tick cut short. A tick
// can meet a sleep only when sent in the microseconds before the thread blocked, which the
// signal's delivery takes on this machine.
int interrupted_sleeps(scriptprof::TimerClock clock, bool system_calls, std::string* delivery) {
  scriptprof::SamplingTimer timer;
  std::string error;
  if (!timer.start({clock, 1'000'000}, count_ticks, nullptr, &error)) {
    std::fprintf(stderr, "timer failed: %s\n", error.c_str());
    return -1;
  }
  const int interrupted = scriptprof::test::frame_loop_interrupted_sleeps(system_calls);
  timer.stop();
  *delivery = timer.delivery();
  return interrupted;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = quick_flag(argc, argv);
  const int rounds = quick ? 1 : 9;
  const unsigned long n = quick ? 150'000'000UL : 300'000'000UL;
  std::printf("== timer signal floor: a C loop, plain vs ticking, %d interleaved round%s\n", rounds,
              rounds == 1 ? "" : "s");
  std::printf("%-28s %8s %8s %12s\n", "timer", "hz", "ratio", "us/signal");
  int failures = 0;
  for (long hz : {100L, 1000L, 10000L}) {
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<double> plain, ticking, per_signal;
      for (int r = 0; r < rounds; ++r) {
        plain.push_back(spin(n));
        g_signals = 0;
        std::string error;
        scriptprof::SamplingTimer timer;
        BareTimer bare;
        struct sigaction sa {}, old{};
        bool ok;
        if (kind == 0) {
          sa.sa_handler = empty_handler;
          sa.sa_flags = SA_RESTART;
          sigaction(SIGPROF, &sa, &old);
          ok = bare.start(hz);
        } else {
          ok = timer.start({scriptprof::TimerClock::Cpu, 1'000'000'000ULL / static_cast<unsigned long long>(hz)},
                           count_ticks, nullptr, &error);
        }
        if (!ok) {
          std::fprintf(stderr, "timer failed: %s\n", kind == 0 ? std::strerror(errno) : error.c_str());
          return 1;
        }
        double t = spin(n);
        if (kind == 0) {
          bare.stop();
          sigaction(SIGPROF, &old, nullptr);
        } else {
          timer.stop();
        }
        ticking.push_back(t);
        unsigned long signals = g_signals.load();
        if (signals > 0) per_signal.push_back((t - plain.back()) / static_cast<double>(signals) * 1e6);
      }
      double ratio = median(ticking) / median(plain);
      std::printf("%-28s %8ld %8.3f %12.1f\n", kind == 0 ? "bare signal, empty handler" : "SamplingTimer, no sample",
                  hz, ratio, per_signal.empty() ? 0.0 : median(per_signal));
      if (!(ratio > 0.2 && ratio < 20) || per_signal.empty()) ++failures;
    }
  }
  std::printf("== sleeps a tick cut short: 1000 frames of 0.3 ms work and a 1 ms sleep, 1 kHz (goal: at most 1)\n");
  // The CPU clock two ways: the kernel's SIGTRAP where perf events are allowed, and the watcher
  // polling, as where perf events are refused (Debian's default perf_event_paranoid for
  // ordinary users).
  struct Delivery {
    scriptprof::TimerClock clock;
    const char* task_clock;  // SCRIPTPROF_TASK_CLOCK for the row, or null
  };
  for (bool system_calls : {false, true})
    for (Delivery d : {Delivery{scriptprof::TimerClock::Cpu, "kernel"}, Delivery{scriptprof::TimerClock::Cpu, "off"},
                       Delivery{scriptprof::TimerClock::Wall, nullptr}}) {
      const auto clock = d.clock;
      std::string delivery;
      // A row sets the switch for its run only: a value the caller gave is put back.
      const char* given = std::getenv("SCRIPTPROF_TASK_CLOCK");
      const std::string before = given ? given : "";
      if (d.task_clock) setenv("SCRIPTPROF_TASK_CLOCK", d.task_clock, 1);
      const int cut = interrupted_sleeps(clock, system_calls, &delivery);
      if (d.task_clock && given) setenv("SCRIPTPROF_TASK_CLOCK", before.c_str(), 1);
      else if (d.task_clock) unsetenv("SCRIPTPROF_TASK_CLOCK");
      if (cut < 0) return 1;
      std::printf("%-10s %-17s %4d of 1000 %-15s %s\n", clock == scriptprof::TimerClock::Cpu ? "cpu clock" : "wall clock",
                  system_calls ? "work: syscalls" : "work: user code", cut,
                  system_calls ? "" : cut <= 1 ? "(goal met)" : "(goal not met)", delivery.c_str());
    }
  return failures == 0 ? 0 : 1;
}
