// Slow frames: a capture window's samples cut at its frame marks (profiler.frame()), the
// frames over a time budget and the worst ones kept with their own samples, and every frame's
// duration for the histogram.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "scriptprof/live_feed.hpp"

namespace scriptprof {

struct CapturedFrame {
  std::uint32_t thread = 0;
  std::uint64_t duration_ns = 0;  // mark to mark, monotonic
  std::uint64_t ended_ns = 0;     // its ending mark's time (CLOCK_MONOTONIC)
  bool over_budget = false;
  LiveFeed::Batch samples;        // the frame's samples alone
};

struct FrameSplit {
  std::vector<std::uint64_t> durations_ns;  // every whole frame of the window, in mark order
  std::vector<CapturedFrame> kept;          // over budget, and the `worst` longest; longest first
};

// The whole frames of `window` (between two marks of one thread; the part before a thread's
// first mark and after its last is no whole frame). Keeps every frame over `budget_ns` and
// the `worst` longest, at most `most` in all (the longest).
FrameSplit split_frames(const LiveFeed::Batch& window, std::uint64_t budget_ns, std::size_t worst,
                        std::size_t most = 256);

}  // namespace scriptprof
