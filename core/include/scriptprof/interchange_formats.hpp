// The formats other tools view: speedscope JSON (FORMATS.md 8), Chrome trace events (10) and
// pprof's gzip-compressed profile.proto (9).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct SpeedscopeOptions {
  bool merge_runs = true;  // consecutive identical stacks become one sample (weights summed)
  bool evented = false;    // open/close events from the timeline (needs full stacks)
};

// Sampled profiles, one per thread, weights in milliseconds. Uses the full stacks in time
// order when kept, else the call tree's paths.
std::string write_speedscope(const Profile& profile, const SpeedscopeOptions& options = {});
// Evented profiles (FORMATS.md 8.4), one per thread, times in milliseconds; false without full stacks.
bool write_speedscope_evented(const Profile& profile, std::string* out, std::string* error);

// Reads speedscope's sampled and evented profiles (evented intervals become samples weighted
// by their length). Every profile is a thread. Ours carry "scriptprof": the samples and the
// time each stood for come back; others get one period, the weights' common divisor in ns.
bool read_speedscope(std::string_view text, Profile* out, std::string* error,
                     std::vector<std::string>* warnings = nullptr);

// Chrome's trace event JSON: B/E slices per thread from the timeline. Needs full stacks; fails
// with a message saying so otherwise.
bool write_chrome_trace(const Profile& profile, std::string* out, std::string* error);

// A self-contained HTML viewer (one file, no network): flame graph (click to zoom, search by
// substring), function table, one function's callers and callees. With `base` (profdiff), a
// differential flame graph of `profile` against it: each frame red where its stack's share of
// the samples grew, blue where it shrank, with both runs' times on hover.
std::string write_html_flame_graph(const Profile& profile, const Profile* base = nullptr);

// pprof: `gzip` false gives the raw protobuf (tests compare it with the worked example).
std::string write_pprof(const Profile& profile, bool gzip = true);

}  // namespace scriptprof
