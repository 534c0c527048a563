// A frame loop as the host-safety issue states its bound: ~0.3 ms of work on the thread's CPU
// clock, then a 1 ms sleep, 1000 frames. Returns how many sleeps a signal cut short (EINTR).
// Shared by timer_signals_test.cpp (a bound no noise explains) and the timer bench (the figure).
//
// The work is user code (as a game's frame is), reading the thread's CPU clock every ~20 us;
// with `system_calls` it is nothing but reads of that clock, each a system call (a timer that
// delivers in user space only, as the perf events on branch wip/task-clock-ticks do, must back
// itself up there with queued signals, which can meet the sleep that follows).
#pragma once
#include <cerrno>
#include <cstdint>
#include <ctime>

namespace scriptprof::test {

inline int frame_loop_interrupted_sleeps(bool system_calls = false) {
  auto cpu_ns = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  int interrupted = 0;
  volatile std::uint64_t x = 0;
  for (int frame = 0; frame < 1000; ++frame) {
    const std::int64_t t0 = cpu_ns();
    while (cpu_ns() - t0 < 300'000)
      if (!system_calls)
        for (int i = 0; i < 20000; ++i) x = x + static_cast<std::uint64_t>(i);
    timespec nap{0, 1'000'000};
    if (nanosleep(&nap, nullptr) != 0 && errno == EINTR) ++interrupted;
  }
  return interrupted;
}

}  // namespace scriptprof::test
