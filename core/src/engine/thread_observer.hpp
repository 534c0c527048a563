// What the timer's watcher sees of the profiled thread: whether it is on a CPU, waiting for
// one, or blocked, and which CPU it is on. Its CPU clock tells the first cheaply (a clock that
// moves between two reads runs); /proc/self/task/TID/stat tells the rest at the cost of a read.
// Before a signal, /proc/self/task/TID/syscall tells whether the kernel still has it running:
// a thread entering a sleep is marked asleep there before it leaves the CPU.
#pragma once
#include <cstdint>
#include <ctime>
#include <sys/types.h>

namespace scriptprof {

class ThreadObserver {
 public:
  enum class State { Running, Ready, Blocked };

  ThreadObserver() = default;
  ThreadObserver(const ThreadObserver&) = delete;
  ThreadObserver& operator=(const ThreadObserver&) = delete;
  ~ThreadObserver() { close(); }

  // Watches thread `tid` of this process, whose CPU clock is `cpu_clock`. Without /proc the
  // clock alone decides (a still clock is blocked).
  void open(pid_t tid, clockid_t cpu_clock);
  void close();
  // Its state now. A clock still since the last call is taken as blocked at once on three
  // calls of four, unless `look_closely` asks /proc every time (before a signal: then the
  // kernel's task state alone decides where /proc gives it, and the clock is not read; a
  // thread entering a sleep is Blocked). `cpu_now`:
  // the thread's CPU clock read by the caller just before (a system call saved), or 0.
  // `moved_is_enough`: a clock that moved since the last call is Running without the second
  // read, for a caller that looks closely before it acts on it.
  State state(bool look_closely, std::uint64_t cpu_now = 0, bool moved_is_enough = false);
  // Whether the kernel has the thread asleep now (neither on a CPU nor waiting for one): one
  // read of /proc, no clock; false where /proc cannot say.
  bool asleep() const;
  // The CPU the thread is on, or last ran on; -1 when /proc cannot say.
  int processor() const;
  // Its CPU clock as the last state() that read it saw it (the watcher's, under its lock).
  std::uint64_t cpu_at_last_look() const { return last_cpu_; }

 private:
  // Reads the thread's /proc stat line into `buf`; the text after the name's ')' or null.
  const char* read_stat(char* buf, std::size_t size) const;
  // Whether the kernel's task state is still "running" (on a CPU or waiting for one).
  bool kernel_says_running() const;
  // The state letter of the thread's /proc stat line ('R', 'S', 'D'...), or 0 where there is none.
  char stat_state() const;

  clockid_t cpu_clock_ = CLOCK_MONOTONIC;
  int stat_fd_ = -1;
  int syscall_fd_ = -1;  // /proc/self/task/TID/syscall, where it can be read
  std::uint64_t last_cpu_ = 0;
  unsigned quiet_checks_ = 0;  // calls that found the clock still
};

}  // namespace scriptprof
