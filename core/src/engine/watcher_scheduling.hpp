// How the timer's watcher thread is scheduled against the thread it serves: its wake-ups must
// reach the profiled thread at once, which they cannot from behind it on the same CPU.
#pragma once
#include <sched.h>

#include <cstdint>

namespace scriptprof {

class WatcherScheduling {
 public:
  // On the watcher thread, once at its start: asks for a short slice, and takes the CPUs it
  // may run on (inherited from the thread that started it) as the set it moves within.
  void begin();
  // On the watcher thread, after a wake-up later than kLateWakeNs: where it shares the
  // profiled thread's CPU (`thread_cpu`), it moves to the others it may use; moved already, it
  // goes back to all of them (the others were busy too). One system call, on a late wake only.
  void woke_late(int thread_cpu);

  static constexpr std::uint64_t kLateWakeNs = 250'000;

 private:
  cpu_set_t allowed_;       // the CPUs it may use, as begin() found them
  int count_ = 0;           // how many
  bool kept_off_ = false;   // moved off the thread's CPU
};

}  // namespace scriptprof
