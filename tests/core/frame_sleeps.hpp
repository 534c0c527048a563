// A frame loop as the host-safety issue states its bound: ~0.3 ms of work on the thread's CPU
// clock, then a 1 ms sleep, 1000 frames. Returns how many sleeps a signal cut short (EINTR).
// Shared by timer_signals_test.cpp (a bound no noise explains) and the timer bench (the figure).
#pragma once
#include <cerrno>
#include <ctime>

namespace scriptprof::test {

inline int frame_loop_interrupted_sleeps() {
  int interrupted = 0;
  for (int frame = 0; frame < 1000; ++frame) {
    timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1'000'000'000L + (t.tv_nsec - t0.tv_nsec) < 300'000);
    timespec nap{0, 1'000'000};
    if (nanosleep(&nap, nullptr) != 0 && errno == EINTR) ++interrupted;
  }
  return interrupted;
}

}  // namespace scriptprof::test
