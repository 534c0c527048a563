// Formats that carry stacks as begin/end intervals or as raw per-tick snapshots: the lms
// profiler CSV (FORMATS.md 6) and Apple's Sampler "supersampler" file (5).
#pragma once
#include <string>
#include <string_view>

#include "scriptprof/profile.hpp"

namespace scriptprof {

// lms CSV of one thread (the format has no thread field): mapping lines, then begin/end lines
// with microsecond differences. Needs full stacks; false with a message otherwise.
bool write_lms_csv(const Profile& profile, std::string* out, std::string* error);

// Reads lms CSV: each stretch of time with a constant stack becomes a sample weighted by its
// length in microseconds (wall clock). Errors carry the line number.
bool read_lms_csv(std::string_view text, Profile* out, std::string* error);

// Sampler file: one line per tick (weights are repeated), leaf first, a block per thread.
std::string write_sampler(const Profile& profile);

// Reads a Sampler file, parsing by length (ids may contain TAB or LF bytes).
bool read_sampler(std::string_view bytes, Profile* out, std::string* error);

}  // namespace scriptprof
