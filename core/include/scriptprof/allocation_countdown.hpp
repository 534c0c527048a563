// Where allocation samples fall (Allegro's space profiler, in bytes rather than pages).
// Sample points form a Poisson process over the bytes allocated, with `mean_bytes` between points
// on average, so no loop can alias with a fixed interval. A sample weighs the bytes since the
// previous point: weights sum to every byte allocated up to the last point, and each allocation's
// expected charge is exactly its size (the gap before a point is memoryless).
#pragma once
#include <cstdint>

namespace scriptprof {

class AllocationCountdown {
 public:
  // mean_bytes 0 samples nothing.
  explicit AllocationCountdown(std::uint64_t mean_bytes = 0, std::uint64_t seed = 0x9e3779b97f4a7c15ull);

  // Counts an allocation of `bytes`; returns the weight of the sample it calls for (0: none).
  // O(1) whatever the size: an allocation spanning many points is one sample of their bytes.
  // Inline: the allocator counts every allocation of the program here; nearly all hold no point.
  std::uint64_t allocate(std::uint64_t bytes) {
    if (bytes < until_next_) {
      until_next_ -= bytes;
      since_last_ += bytes;
      return 0;
    }
    return reach_point(bytes);
  }

  std::uint64_t mean_bytes() const { return mean_; }
  std::uint64_t unsampled_bytes() const { return since_last_; }  // after the last point

 private:
  std::uint64_t draw();  // an exponential gap, at least 1 byte
  std::uint64_t reach_point(std::uint64_t bytes);  // allocate() when a point falls in `bytes`

  std::uint64_t mean_;
  std::uint64_t rng_;
  std::uint64_t until_next_ = 0;  // bytes before the next point
  std::uint64_t since_last_ = 0;  // bytes since the previous point
};

}  // namespace scriptprof
