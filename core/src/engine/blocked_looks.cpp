#include "blocked_looks.hpp"

namespace scriptprof {

namespace {

// How often the watcher looks at a blocked thread. A look (a wake-up, a clock read, a sleep)
// costs 25-30 us of CPU on these virtual machines: at 1 ms, a thread blocked in a read costs
// about 3% of a core. The ticks due after a wake wait for the first look after it, so in the
// first milliseconds of a block, where a frame loop's sleeps end, looks come sooner.
constexpr std::uint64_t kBlockedPollNs = 1'000'000;
constexpr std::uint64_t kFirstBlockedPollNs = 200'000;
constexpr std::uint64_t kShortBlockNs = 2'000'000;

}  // namespace

void BlockedLooks::begin() { blocked_since_ns_ = 0; }

void BlockedLooks::saw(bool runs, std::uint64_t look_ns) {
  last_look_ns_ = look_ns;
  if (runs) blocked_since_ns_ = 0;
  else if (!blocked_since_ns_) blocked_since_ns_ = look_ns;
}

// Looks at a blocked thread come often in the first milliseconds of a block, where the sleeps
// of a frame loop end (the ticks after its wake wait for the next look), and seldom after: a
// thread blocked in a read then costs a look a millisecond.
std::uint64_t BlockedLooks::pace() const {
  return blocked_since_ns_ && last_look_ns_ - blocked_since_ns_ >= kShortBlockNs ? kBlockedPollNs : kFirstBlockedPollNs;
}

}  // namespace scriptprof
