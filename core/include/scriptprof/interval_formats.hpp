// Formats that carry stacks as begin/end intervals or as raw per-tick snapshots: the lms
// profiler CSV (FORMATS.md 6) and Apple's Sampler "supersampler" file (5).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

// lms CSV of one thread (the format has no thread field): mapping lines, then begin/end lines
// with microsecond differences. Needs full stacks; false with a message otherwise.
bool write_lms_csv(const Profile& profile, std::string* out, std::string* error);

// One begin or end of an lms interval: `id` indexes the names given with it.
struct LmsEvent {
  bool begin;
  std::uint32_t id;
  std::uint64_t t_ns;  // since the start; events come in time order
};
// lms CSV of events: with `mapping_first` every mapping line comes first (what instrumented
// zones write), otherwise each just before the id's first use. Times are rounded to whole
// microseconds before their differences are taken, so rounding never drifts.
std::string write_lms_events(const std::vector<std::string>& names, const std::vector<LmsEvent>& events,
                             bool mapping_first);

// One interval read back from lms CSV, in microseconds since the start.
struct LmsInterval {
  std::string name;
  std::uint64_t begin_us;
  std::uint64_t end_us;
};
// Reads lms CSV as intervals, matching each end with the latest open begin of the same id
// (intervals of different ids may overlap, as zones of fibers sharing a thread do). Errors
// carry the line number. Intervals come in the order they end.
bool read_lms_intervals(std::string_view text, std::vector<LmsInterval>* out, std::string* error);

// Reads lms CSV: each stretch of time with a constant stack becomes a sample weighted by its
// length in microseconds (wall clock). Errors carry the line number.
bool read_lms_csv(std::string_view text, Profile* out, std::string* error);

struct SamplerWriteOptions {
  std::uint64_t max_lines = 20'000'000;  // more ticks are refused rather than exhaust memory
  std::uint64_t max_bytes = 256ull << 20;  // and so is a file larger than this (lines of deep
                                           // stacks: up to 1024 frames of 4 bytes a tick)
  bool time_scale = true;  // a symbol no sample uses, "scriptprof period_ns=...": the time a
                           // line stands for (the format has no field for it)
};

// Sampler file: one line per tick (the format has no weights, so they are repeated), leaf
// first, a block per thread.
bool write_sampler(const Profile& profile, std::string* out, std::string* error,
                   const SamplerWriteOptions& options = {});

// Reads a Sampler file, parsing by length (ids may contain TAB or LF bytes). Time comes from
// the "scriptprof" symbol; without it a line is 10 ms, and a warning says so.
bool read_sampler(std::string_view bytes, Profile* out, std::string* error,
                  std::vector<std::string>* warnings = nullptr);

}  // namespace scriptprof
