// The slow-frames page of a profile server (/debug/scriptprof/frames): a histogram of every
// captured frame's duration, whose bars open the flame graph of the longest kept frame they
// hold, and the kept frames (over the budget, and the worst) with their durations and links
// to each one's flame graph and pprof file.
#pragma once
#include <string>

#include "scriptprof/live_collection.hpp"

namespace scriptprof {

// The page for `frames`, captured over `seconds` at `hz`; frame i of frames.kept is at
// "frame?id=i" (and "frame?id=i&format=pprof").
std::string frames_page(const LiveCollection::Frames& frames, double seconds, double hz);

}  // namespace scriptprof
