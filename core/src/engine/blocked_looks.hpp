// How soon the timer's watcher looks again at a profiled thread that is blocked. Watcher only,
// but for begin() (the watcher parked).
#pragma once
#include <cstdint>

namespace scriptprof {

class BlockedLooks {
 public:
  void begin();  // a run starts: no block seen yet

  // What a check found, at monotonic time `look_ns`: the thread runs, or it is blocked.
  void saw(bool runs, std::uint64_t look_ns);
  // The delay to the next look at a blocked thread.
  std::uint64_t pace() const;

 private:
  std::uint64_t blocked_since_ns_ = 0;  // the look that first found the thread blocked (0: it runs)
  std::uint64_t last_look_ns_ = 0;
};

}  // namespace scriptprof
