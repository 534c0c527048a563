// Brendan Gregg's folded stacks, as flamegraph.pl reads them (FORMATS.md 7): written and read.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct FoldedWriteOptions {
  bool idle_frame = true;      // samples outside any function as "(idle)"; false drops them
  bool thread_root = false;    // prefix each stack with its thread's label
  bool time_scale = true;      // a first line "# scriptprof period_ns=... total_seconds=...": the
                               // time a count stands for (flamegraph.pl skips it as one invalid
                               // line; speedscope ignores it)
};

// One line per distinct stack, root first, with its total weight; lines sorted bytewise.
std::string write_folded(const Profile& profile, const FoldedWriteOptions& options = {});

// Parses folded stacks into `out` (cleared first). Each line is "frame;frame;... count"
// (a differential line "stack count1 count2" counts count2; decimals round, with a warning).
// A lone "(idle)" stack reads back as a sample outside any function. Time comes from the
// "# scriptprof" line when there is one; else a count is `period_ns`, with a warning saying so.
// Malformed lines fail with "line N: ...".
bool read_folded(std::string_view text, Profile* out, std::string* error,
                 std::vector<std::string>* warnings = nullptr, std::uint64_t period_ns = 10'000'000);

}  // namespace scriptprof
