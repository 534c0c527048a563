// The LispWorks profiler tree file (FORMATS.md 4): written, and read back into a profile that
// every report can print.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct LispWorksWriteOptions {
  std::string tree_name;          // empty: the profile's name, else "scriptprof"
  bool thread_level = false;      // a node per thread even with one thread (always with several)
  bool metadata = true;           // a ";scriptprof ..." comment keeping period and times
};

// The whole file. Nodes are written without recursion, so any depth is fine.
std::string write_lispworks_tree(const Profile& profile, const LispWorksWriteOptions& options = {});

struct ReadLimits {
  std::size_t max_depth = 1'000'000;  // deeper trees are refused, not allowed to exhaust memory
};

// Parses a tree file into `out` (cleared first). On malformed input returns false with
// "line N: what is wrong" in `error`. Recoverable oddities (child counts above the parent's,
// differing copies of a function's info) are reported in `warnings`.
bool read_lispworks_tree(std::string_view text, Profile* out, std::string* error,
                         std::vector<std::string>* warnings = nullptr, const ReadLimits& limits = {});

}  // namespace scriptprof
