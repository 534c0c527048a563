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
  // On the watcher thread, right before it signals a thread that blocks now and then (on the
  // polled CPU clock): moves onto the thread's CPU (`thread_cpu`, -1: unknown), so that the
  // signal is sent while the thread is off its CPU and lands before it can enter a sleep. With
  // `thread_cpu` -1 (the thread has not blocked lately) it leaves that CPU again: a thread that
  // never sleeps has no sleep to cut, and should not wait behind the watcher.
  void follow(int thread_cpu);

  static constexpr std::uint64_t kLateWakeNs = 250'000;

 private:
  cpu_set_t allowed_;       // the CPUs it may use, as begin() found them
  int count_ = 0;           // how many
  bool kept_off_ = false;   // moved off the thread's CPU
  int joined_ = -1;         // the thread's CPU it was moved onto by follow(), or -1
};

}  // namespace scriptprof
