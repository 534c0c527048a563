// How the timer's watcher looks at a profiled thread that is blocked: how soon it looks again,
// and, on the CPU clock where perf events are allowed, the task clock alarm that wakes it when
// the thread has run to its next tick (task_clock_alarm.hpp). Watcher only, but for begin() and
// end() (the watcher parked) and interrupt() (any thread).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>

namespace scriptprof {

class TaskClockAlarm;

class BlockedLooks {
 public:
  BlockedLooks();
  ~BlockedLooks();
  BlockedLooks(const BlockedLooks&) = delete;
  BlockedLooks& operator=(const BlockedLooks&) = delete;

  // A run starts on thread `tid`: on the CPU clock the alarm is opened where the system allows
  // it (SCRIPTPROF_TASK_CLOCK=off keeps the looks alone: tests compare the two, a user can too).
  void begin(bool cpu_clock, pid_t tid);
  void end();  // the run stopped: the alarm is closed

  // What a check found, at monotonic time `look_ns`: the thread runs, or it is blocked.
  void saw(bool runs, std::uint64_t look_ns);
  // The delay to the next look at a blocked thread, the looks' pace alone.
  std::uint64_t pace() const;
  // The same with the alarm armed to ring once the thread has run `cpu_ahead` more (0: as soon
  // as it runs). Without an alarm, pace().
  std::uint64_t arm(std::uint64_t cpu_ahead);
  // Whether a blocked thread's wake rings the alarm.
  bool rings() const;
  // The watcher's sleep until its next look, `lock` released meanwhile: on the alarm when there
  // is one, else on `wake`. interrupt() ends it, as does a notify of `wake` without an alarm.
  void sleep(std::unique_lock<std::mutex>& lock, std::condition_variable& wake, std::uint64_t delay);
  void interrupt();
  // How the last run on the CPU clock learnt of a blocked thread's wake, then `carrier`:
  // "task clock alarm" or "task clock alarm (user time)", or "polled CPU clock" with why
  // there was no alarm in parentheses after the carrier.
  std::string how(const std::string& carrier) const;

 private:
  std::unique_ptr<TaskClockAlarm> alarm_;
  std::string missing_;                 // why the run has no alarm (perf events refused, or off)
  std::uint64_t blocked_since_ns_ = 0;  // the look that first found the thread blocked (0: it runs)
  std::uint64_t last_look_ns_ = 0;
};

}  // namespace scriptprof
