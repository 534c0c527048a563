// Totals that are derived on first read after a change, not kept up to date per sample: the
// recorder only marks them stale (a store), and the first reader settles them once. Readers on
// several threads may meet at a stale flag (a C host reading one profile from two threads), so
// settling is done under a lock and published with release/acquire. Recording while another
// thread reads is, as before, the caller's to prevent.
#pragma once
#include <atomic>
#include <mutex>

namespace scriptprof {

class SettleFlag {
 public:
  SettleFlag() = default;
  // A copy carries the state of what it copies, with a lock of its own.
  SettleFlag(const SettleFlag& o) : stale_(o.stale_.load(std::memory_order_acquire)) {}
  SettleFlag& operator=(const SettleFlag& o) {
    stale_.store(o.stale_.load(std::memory_order_acquire), std::memory_order_relaxed);
    return *this;
  }

  // The recorder: the totals no longer match what was recorded.
  void mark_stale() { stale_.store(true, std::memory_order_relaxed); }
  // A reader: runs `settle` once if the totals are stale, so that they are right on return.
  template <typename Settle>
  void ensure(Settle&& settle) const {
    if (!stale_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stale_.load(std::memory_order_relaxed)) return;
    settle();
    stale_.store(false, std::memory_order_release);
  }

 private:
  mutable std::atomic<bool> stale_{false};
  mutable std::mutex mutex_;
};

}  // namespace scriptprof
