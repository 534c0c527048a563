#include "watcher_scheduling.hpp"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace scriptprof {

namespace {

// The shortest slice a normal thread may ask for (Linux 6.12's EEVDF: 100 us, no privilege
// needed). A woken thread with a short slice gets an early deadline and may preempt the thread
// running on its CPU; with the default (3 ms) it waited behind it (a LÖVE game's love.update on
// the wall clock: 0.07-0.09 of the callbacks' CPU samples for 0.16; a 50 us function after each
// sleep: 0.15-0.16 for 0.205). The nice value and policy stay the thread's; an older kernel
// ignores the request.
void ask_short_slice() {
  struct {  // the kernel's struct sched_attr (linux/sched/types.h clashes with glibc's sched.h)
    std::uint32_t size, sched_policy;
    std::uint64_t sched_flags;
    std::int32_t sched_nice;
    std::uint32_t sched_priority;
    std::uint64_t sched_runtime, sched_deadline, sched_period;
  } attr;
  std::memset(&attr, 0, sizeof attr);
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0 || attr.sched_policy != SCHED_OTHER) return;
  attr.size = sizeof attr;
  attr.sched_flags = 0;
  attr.sched_runtime = 100'000;
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

}  // namespace

void WatcherScheduling::begin() {
  // The least timer slack the kernel allows, or a 10 kHz rate would be woken 50 us late.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  ask_short_slice();
  CPU_ZERO(&allowed_);
  count_ = sched_getaffinity(0, sizeof allowed_, &allowed_) == 0 ? CPU_COUNT(&allowed_) : 0;
  kept_off_ = false;
  joined_ = -1;
}

// A wake-up raised on the profiled thread's CPU (an interrupt there) puts the watcher on that CPU, and its later timer wake-ups keep it there. Mostly it
// then preempts the thread at once (its short slice), the quickest a wake-up can reach it: a
// wake-up across CPUs costs 60-80 us more on these virtual machines. But at times the kernel
// lets the thread run on first, up to 900 us: the ticks it was woken for reached the thread
// when it next blocked, and a LuaJIT frame loop on the CPU clock at 1 kHz gave its first
// function 5-9 points too few (95% of the watcher's wake-ups on the thread's CPU, the other
// idle). So the watcher stays where it is woken until a wake-up comes late there.
void WatcherScheduling::woke_late(int thread_cpu) {
  if (count_ < 2) return;
  joined_ = -1;  // woken late where it joined the thread: it moves off, as below
  if (kept_off_) {
    kept_off_ = false;
    if (sched_setaffinity(0, sizeof allowed_, &allowed_) != 0) count_ = 0;
    return;
  }
  if (thread_cpu < 0 || !CPU_ISSET(thread_cpu, &allowed_) || sched_getcpu() != thread_cpu) return;
  cpu_set_t others = allowed_;
  CPU_CLR(thread_cpu, &others);
  // Refused (the host narrowed the process's CPUs since): stay, and stop trying.
  if (sched_setaffinity(0, sizeof others, &others) != 0) count_ = 0;
  else kept_off_ = true;
}

// Why on the thread's CPU: from another CPU a signal sent while the thread runs reaches it
// after an interrupt between the CPUs (several microseconds on these virtual machines), and a
// thread that entered nanosleep meanwhile has its sleep cut short. That was 2-7 sleeps in 1000
// (1 ms sleeps at 1 kHz, polled CPU clock); on its CPU, none in 20,000.
void WatcherScheduling::follow(int thread_cpu) {
  if (count_ < 2) return;
  if (thread_cpu < 0 || !CPU_ISSET(thread_cpu, &allowed_)) {
    if (joined_ < 0) return;
    joined_ = -1;
    if (sched_setaffinity(0, sizeof allowed_, &allowed_) != 0) count_ = 0;
    return;
  }
  if (joined_ == thread_cpu && sched_getcpu() == thread_cpu) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(thread_cpu, &one);
  // Refused (the host narrowed the process's CPUs since): stay, and stop trying.
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    count_ = 0;
    return;
  }
  joined_ = thread_cpu;
  kept_off_ = false;
}

}  // namespace scriptprof
