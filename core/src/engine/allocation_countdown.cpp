#include "scriptprof/allocation_countdown.hpp"

#include <cmath>

namespace scriptprof {

AllocationCountdown::AllocationCountdown(std::uint64_t mean_bytes, std::uint64_t seed)
    : mean_(mean_bytes), rng_(seed ? seed : 1) {
  if (mean_) until_next_ = draw();
}

std::uint64_t AllocationCountdown::draw() {
  // xorshift64*: cheap, and good enough to keep sample points off any program's rhythm.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  std::uint64_t r = rng_ * 0x2545f4914f6cdd1dull;
  double u = (static_cast<double>(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (0, 1)
  double gap = -std::log(u) * static_cast<double>(mean_);
  if (!(gap < 1e18)) gap = 1e18;
  return gap < 1.0 ? 1 : static_cast<std::uint64_t>(gap);
}

std::uint64_t AllocationCountdown::reach_point(std::uint64_t bytes) {
  if (mean_ == 0 || bytes == 0) return 0;
  // The first point falls `until_next_` bytes in; the rest of the allocation may hold more.
  // Looking back from its end, the distance to the last of them is again an exponential gap.
  std::uint64_t weight = since_last_ + until_next_;
  std::uint64_t rest = bytes - until_next_;
  std::uint64_t back = draw();
  if (back < rest) {
    weight += rest - back;
    since_last_ = back;
  } else {
    since_last_ = rest;
  }
  until_next_ = draw();
  return weight;
}

}  // namespace scriptprof
