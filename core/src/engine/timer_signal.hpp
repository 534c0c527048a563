// The signal that carries a timer's ticks to the profiled thread. One handler per signal number
// serves every timer using it, process-wide: a running timer holds a slot in the handler's
// registry, and its signals carry a token (a magic, the slot and the slot's generation) and our
// pid. The handler trusts only a token whose slot holds that generation now; one of a stopped
// timer is swallowed. A SIGTRAP the kernel sends for a timer's perf event (direct_ticks.hpp)
// carries the token as its si_perf_data. Any other signal of that number goes to the handler
// that was installed before ours.
#pragma once
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace scriptprof {

class SamplingTimer;

class TimerSignal {
 public:
  TimerSignal() = default;
  ~TimerSignal() { release(); }
  TimerSignal(const TimerSignal&) = delete;
  TimerSignal& operator=(const TimerSignal&) = delete;

  // Installs the handler on `sig` (it stays for the life of the process) and gives `timer` a
  // slot: its signals then reach timer->on_signal(). On the thread to be signalled, which gets
  // an alternate signal stack. False with `error` set when it cannot.
  bool claim(int sig, SamplingTimer* timer, std::string* error);
  // Frees the slot: a signal still queued is swallowed. Waits out a handler running on another
  // thread that found the slot before (on the signalled thread none can be running here).
  void release();

  // Whether the handler on our signal is still ours: the program may have replaced or ignored it.
  bool handler_is_ours() const;
  // Queues one signal to thread `tid`; false when the queue is full or the thread gone.
  bool send(pid_t tid) const;
  int number() const { return sig_; }
  // What this timer's signals carry (valid from claim() to release()).
  std::uint64_t token() const { return token_; }

 private:
  int sig_ = 0;
  int slot_ = -1;
  std::uint64_t token_ = 0;
  pid_t claimed_by_ = 0;  // the thread that claimed: the one signalled
  pid_t pid_ = 0;         // the process and its user, as each signal carries them (read at
  uid_t uid_ = 0;         // claim: two system calls a tick saved)
};

}  // namespace scriptprof
