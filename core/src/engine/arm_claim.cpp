#include "scriptprof/arm_claim.hpp"

#include <sched.h>

namespace scriptprof {

bool ArmClaim::enter() {
  for (unsigned tries = 0;; ++tries) {
    std::uint8_t held = kFree;
    if (holder_.compare_exchange_weak(held, kNormal, std::memory_order_acq_rel, std::memory_order_relaxed))
      return false;
    if (held == kNormal) return true;
    // The signal side or the timer's thread: both let go within microseconds, unless the
    // timer's thread lost its CPU while holding the claim; then give it ours.
    if (tries >= 64) sched_yield();
  }
}

}  // namespace scriptprof
