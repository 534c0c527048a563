// Allegro CL's flat profile and call graph (FORMATS.md 3): time at the top of the stack, and
// parents/children per function with the `r` marker where recursion double counts.
#pragma once
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct AllegroOptions {
  double significance_threshold = 0.01;             // rows/entries below 1% of the time go
  double fractional_significance_threshold = 0.02;  // parent/child lines below 2% of the node go
  std::vector<std::string> hidden;                  // function names or labels folded into callers
  std::vector<std::string> hidden_packages;         // source or name prefixes ("lib/", "string.")
};

std::string allegro_flat_report(const Profile& profile, const AllegroOptions& options = {});
std::string allegro_call_graph(const Profile& profile, const AllegroOptions& options = {});
// prof:show-call-counts: "<count> #<Function NAME>" per counted function, count descending.
std::string allegro_call_counts(const Profile& profile);

}  // namespace scriptprof
