// GNU gprof's flat profile and call graph (FSF style, as `gprof -b`), filled exactly from stack
// samples instead of gprof's propagation (FORMATS.md 2).
#pragma once
#include <string>

#include "scriptprof/profile.hpp"

namespace scriptprof {

std::string gprof_flat_report(const Profile& profile);

// Without call counting, arc lines show n/m with n the samples through the arc and m all
// samples into the callee, and the called column is blank (a documented deviation).
std::string gprof_call_graph(const Profile& profile);

}  // namespace scriptprof
