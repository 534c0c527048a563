// Two profiles of the same program compared: what changed, per function and per stack.
// People profile to compare a change with the run before it (profdiff).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

// One function in either profile, matched as function_matching.hpp says (by name and file,
// not line: an edit above a function moves its line, not what it is).
struct FunctionChange {
  enum class Presence { Both, BaseOnly, NewOnly, Ambiguous };
  std::string label;  // the new profile's label when it has the function
  Presence presence = Presence::Both;
  double base_self = 0, new_self = 0;          // seconds
  double base_cumulative = 0, new_cumulative = 0;
  double base_self_pct = 0, new_self_pct = 0;  // share of its profile's samples
};

// Every function of either profile, the largest change of self seconds first, then of
// cumulative seconds, then of self share.
std::vector<FunctionChange> diff_functions(const Profile& base, const Profile& now);

// The comparison as text: both profiles' totals, then the `limit` most changed functions
// (0: all) with self %, self seconds and cumulative seconds before, after and the change.
std::string diff_report(const Profile& base, const Profile& now, std::size_t limit);

// The input of a differential flame graph: "stack base_weight new_weight" per stack of either
// profile (flamegraph.pl reads it after difffolded.pl; `flamegraph.pl --negate` for the other
// view). Lines sorted bytewise.
std::string diff_folded(const Profile& base, const Profile& now);

}  // namespace scriptprof
