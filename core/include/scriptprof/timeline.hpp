// Samples turned into nested intervals per thread (FORMATS.md 11.1): what Chrome traces,
// speedscope's evented profiles and the lms CSV show.
#pragma once
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct TimelineEvent {
  bool open;             // true: the function's interval begins; false: it ends
  FunctionId function;
  std::uint64_t t_ns;    // since the start of the run
};

// Events of one thread, balanced (every open is closed), parents opened before children and
// children closed before parents. A sample lasts weight x the measured time per sample, laid
// end to end from the first sample's stamp (its first tick); a sample stamped more than two
// periods after the end so far starts there, after a gap. Needs the profile's full stacks.
std::vector<TimelineEvent> thread_timeline(const Profile& profile, std::uint32_t thread);

// Threads that have samples, in the order their first sample was kept.
std::vector<std::uint32_t> sampled_threads(const Profile& profile);

}  // namespace scriptprof
