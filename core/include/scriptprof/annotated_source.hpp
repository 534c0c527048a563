// Per-line attribution, the analogue of Allegro's disassemble-profile: a function's source with
// the share of samples on each line.
#pragma once
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

// `source` holds the file's lines (source[0] is line 1); empty when the text is unavailable, in
// which case only the lines that have samples are listed. Shares are of the whole profile.
std::string annotated_source(const Profile& profile, FunctionId f, const std::vector<std::string>& source);

}  // namespace scriptprof
