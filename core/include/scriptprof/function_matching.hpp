// Which function of one run is which of another run of the same program, for comparisons
// (profdiff). A function is its name and its file, never its line (an edit above it moves the
// line, not what it is); the file as a path, matched by the longest run of trailing path
// components two files share, so two checkouts of the same tree match; an anonymous function
// by its ordinal among its file's anonymous functions in line order. A name that stands for
// several functions of one file in either run is ambiguous and matched with nothing.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct FunctionMatches {
  std::vector<FunctionId> now_of_base;  // per base function: its function in `now`, or kNoFunction
  std::vector<bool> base_ambiguous;     // per base function: several could be it
  std::vector<bool> now_ambiguous;      // per function of `now`: several could be it
};
FunctionMatches match_functions(const Profile& base, const Profile& now);

// Gives each of base's functions that matches one of now's the other's label, so that stacks
// and tables compare by label alike. Returns how many were renamed.
std::size_t align_labels(Profile* base, const Profile& now);

}  // namespace scriptprof
