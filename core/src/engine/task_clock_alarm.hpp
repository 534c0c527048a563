// A task clock alarm: wakes the timer's watcher thread when the profiled thread has run for a
// given CPU time, so that the watcher need not poll a thread that sleeps to see when it runs
// again. A perf software event (the thread's task clock, counted by the kernel while the thread
// is on a CPU) with one sample period: its overflow writes a record to a small ring buffer,
// which wakes the watcher's poll(). The event sends no signal: every signal to the profiled
// thread still goes through the watcher's checks (handler ours, thread running).
//
// Where perf events are not allowed (perf_event_paranoid 3, seccomp, containers) open() fails
// and the watcher polls as before. Where only user time may be counted (paranoid 2 without
// privileges) an expiry met in kernel code is skipped by the kernel to the next period: the
// watcher then keeps its own looks as a floor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace scriptprof {

class TaskClockAlarm {
 public:
  TaskClockAlarm() = default;
  TaskClockAlarm(const TaskClockAlarm&) = delete;
  TaskClockAlarm& operator=(const TaskClockAlarm&) = delete;
  ~TaskClockAlarm() { close(); }

  // Opens the event on thread `tid` of this process, disarmed. False (with the reason) where
  // the system does not allow it.
  bool open(pid_t tid, std::string* why_not);
  void close();
  // Whether it can ring: open, and its thread has not exited.
  bool is_open() const { return event_fd_ >= 0; }
  // Whether wait() serves: open, even once the thread has exited (interrupt() still ends it).
  bool can_wait() const { return wake_fd_ >= 0; }
  // Whether kernel time is left out (paranoid 2 without privileges): see the header comment.
  bool user_time_only() const { return user_only_; }

  // Rings once, when the thread has run `cpu_ns` more from now (at least 10 us: the kernel's
  // floor for these events). Replaces an earlier arm.
  void arm(std::uint64_t cpu_ns);
  // Waits up to `timeout_ns` for the ring or an interrupt(); true when it rang. Once the thread
  // has exited the event is closed and waits end by their timeout or an interrupt() alone.
  bool wait(std::uint64_t timeout_ns);
  // Any thread: ends a wait() at once (the timer stops, or its rate changed).
  void interrupt();

 private:
  void consume();      // empties the ring buffer (records carry nothing we read)
  void close_event();  // the event alone: wait() still serves interrupt()

  int event_fd_ = -1;  // the perf event
  int wake_fd_ = -1;   // an eventfd that interrupt() writes
  void* ring_ = nullptr;
  std::size_t ring_size_ = 0;
  bool user_only_ = false;
  bool refreshed_ = false;  // a refresh is outstanding: its ring has not been seen yet
};

}  // namespace scriptprof
