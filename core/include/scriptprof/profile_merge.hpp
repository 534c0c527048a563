// Merging profiles: several threads (each profiled on its own) become one profile with a
// process per thread, so one report or file shows them all.
#pragma once
#include "scriptprof/profile.hpp"

namespace scriptprof {

// Adds `from` into `into`: functions equal in kind, name, file and lines become one; samples
// keep their process ids (give each thread its own), their weights and, when both keep full
// stacks, their times; call counts and frame marks add up; profiled time is the sum.
// Per-line counts are not carried over. An empty `into` takes `from`'s clock and period.
void merge_profile(Profile* into, const Profile& from);

}  // namespace scriptprof
