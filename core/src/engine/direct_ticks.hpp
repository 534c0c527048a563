// Ticks the kernel sends straight to the profiled thread, on its CPU clock: a perf software
// event on the thread's task clock whose period ends in a SIGTRAP to that thread (the event's
// `sigtrap`, Linux 5.13; not forced on a thread that blocks it since 5.18). No watcher thread
// wakes for a tick, so a tick costs the signal and its handler alone, and a run on this path
// adds no thread to the process (a second thread makes glibc's malloc take its locked paths
// for good).
//
// The kernel sends that signal as task work, on the thread's way back to its own code: a
// period that ends in a system call is delivered when the call returns, to the code that made
// it, and a pending tick never cuts a sleep short (a frame loop of 300 us of work and 700 us
// of sleep: 0 sleeps of 3000 cut at 1 and 10 kHz; system calls then code, 0.67-0.68 of the
// ticks for 0.69-0.70 of the CPU time at 500 Hz and 1 kHz). A perf event that signals through
// its descriptor (F_SETSIG) does neither: counting kernel time it cut 6 and 46 sleeps of 3000;
// counting user time only, the calls' ticks went to the code after them (0.34 for 0.69).
//
// Each signal carries the timer's token (the event's sig_data, siginfo's si_perf_data), by
// which the process-wide handler finds the timer and tells it from a debugger's SIGTRAP.
//
// Not taken, and the watcher polls the thread's CPU clock instead (usable() says why): perf
// events refused (perf_event_paranoid 3 for ordinary users, seccomp, containers) or limited to
// user time (paranoid 2), kernels before 5.18, a tracer attached (a debugger would stop at
// every tick), valgrind (a system call in every handler, which memcheck misreads), a
// ThreadSanitizer build (it runs a SIGTRAP handler at once, inside its own locks), a signal
// asked for by the program, SCRIPTPROF_TASK_CLOCK set to anything but "kernel".
#pragma once
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace scriptprof {

class DirectTicks {
 public:
  DirectTicks() = default;
  DirectTicks(const DirectTicks&) = delete;
  DirectTicks& operator=(const DirectTicks&) = delete;
  ~DirectTicks() { close(); }

  // Whether thread `tid` of this process can have its ticks sent so; false with the reason.
  // (It opens and closes an event: claim the signal only when it can.)
  static bool usable(pid_t tid, std::string* why_not);
  // Opens the event on thread `tid`, off, its signals carrying `token`. False with the reason.
  bool open(pid_t tid, std::uint64_t token, std::string* why_not);
  void close();

  // The next signal when the thread has run `cpu_ns` more from now (at least 10 us: the
  // kernel's floor). Async-signal-safe (one ioctl); on an event that is off it only sets the
  // period.
  void next_in(std::uint64_t cpu_ns) const;
  // Any thread of the process that opened it: signals from now on, the first in `cpu_ns`; or none.
  void turn_on(std::uint64_t cpu_ns) const;
  void turn_off() const;

 private:
  bool ours() const;  // a fork's child holds the descriptor but must not touch its parent's event

  int fd_ = -1;
  pid_t pid_ = 0;  // the process that opened it
};

}  // namespace scriptprof
