// statprof's tree display (FORMATS.md 1.5): recursion collapsed into cycles, percentages of
// the sample count, then the flat report's footer.
#pragma once
#include <string>
#include <vector>

#include "scriptprof/statprof_flat_report.hpp"

namespace scriptprof {

// Collapses recursion in one root-first stack as Guile's collect-cycles does: each element of
// the result is a group of functions (one function, or the members of a cycle).
std::vector<std::vector<FunctionId>> collect_cycles(const std::vector<FunctionId>& stack);

std::string statprof_tree_report(const Profile& profile, LabelStyle labels = LabelStyle::Plain);

// Guile's anomalies display: functions sampled but never seen called (call counting on).
std::string statprof_anomalies_report(const Profile& profile, LabelStyle labels = LabelStyle::Plain);

}  // namespace scriptprof
