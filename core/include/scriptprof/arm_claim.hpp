// Who may move the adapter's arm at this instant: the profiled thread's normal code (sections
// may nest), its signal handler, or the timer's thread arming a blocked thread (arm_blocked).
// One word claimed by compare-and-swap, so that no two of them move the arm at once. A flag
// that normal code sets and the signal side reads is enough against a handler on the same
// thread, never against another thread: the timer's thread could read it clear, then arm while
// the thread it found blocked woke and moved the arm itself.
//
// The signal side and the timer's thread only try (a claim held elsewhere leaves their ticks
// waiting); normal code waits while another thread holds it, which is never for long: the
// timer's thread holds it for one arm_blocked() and blocks on nothing there. Lock-free atomics
// only, so the signal side may use it.
#pragma once
#include <atomic>
#include <cstdint>

namespace scriptprof {

class ArmClaim {
 public:
  // Normal code: holds the claim until leave(). True when the caller already held it (a nested
  // section, or normal code on another thread, as before this class: that is the caller's to
  // prevent); leave() then keeps it held.
  bool enter();
  void leave(bool was) {
    if (!was) holder_.store(kFree, std::memory_order_release);
  }
  // The signal side (on the profiled thread, or the timer's thread for thread_arm adapters):
  // true when it now holds the claim; release() gives it back.
  bool try_signal() { return try_take(kSignal); }
  // The timer's thread, arming a blocked thread: true when it now holds the claim.
  bool try_timer() { return try_take(kTimer); }
  void release() { holder_.store(kFree, std::memory_order_release); }

 private:
  enum Holder : std::uint8_t { kFree, kNormal, kSignal, kTimer };
  bool try_take(Holder who) {
    std::uint8_t free = kFree;
    return holder_.compare_exchange_strong(free, who, std::memory_order_acq_rel, std::memory_order_relaxed);
  }
  std::atomic<std::uint8_t> holder_{kFree};
};

}  // namespace scriptprof
