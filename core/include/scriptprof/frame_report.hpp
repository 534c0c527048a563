// Frames of a game (marked with profiler.frame() / scriptprof_frame()): how long the average
// frame is, which frames were slowest, and what ran in them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct FrameSpan {
  std::uint32_t thread;
  std::size_t index;       // 1 = the first frame, which the first mark ends
  std::uint64_t begin_ns;  // profiled time, as samples carry it
  std::uint64_t end_ns;
};

// Frames per thread, in time order: a mark ends a frame, the first begun with the profile.
std::vector<FrameSpan> frame_spans(const Profile& profile);

// Per thread: frame count, average and longest frame, then the `slowest` longest frames with
// the functions that ran most in each (needs full stacks; otherwise only the lengths); 0: no list.
std::string frame_report(const Profile& profile, std::size_t slowest = 5);

}  // namespace scriptprof
