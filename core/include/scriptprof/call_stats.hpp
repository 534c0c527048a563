// Statistics computed once from a profile (Guile statprof's call-data and stats records);
// every report formats these rather than recomputing them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

// How the cumulative column counts a recursive function.
enum class CumulativeMode {
  OncePerStack,  // the statprof manual and this profiler's default
  EveryFrame,    // Guile 3.0.8's actual behaviour (option guile3_occ)
};

struct CallStats {
  FunctionId function = kNoFunction;
  double pct_time = 0.0;                    // 100 * self samples / sample count
  double cum_secs = 0.0;                    // cumulative samples * seconds per sample
  double self_secs = 0.0;                   // self samples * seconds per sample
  std::uint64_t cum_samples = 0;
  std::uint64_t self_samples = 0;
  std::optional<std::uint64_t> calls;       // exact, when counted
  std::optional<double> self_secs_per_call; // self / calls (0 when calls is 0), if counted
  double cum_secs_per_call = 0.0;           // cum / max(calls, 1)
};

// Seconds per sample: total time / sample weight, 0 for an empty profile.
double seconds_per_sample(const Profile& profile);

// Stats of every function that was sampled or called, ordered as the flat report prints them:
// self seconds descending, then cumulative descending, then label bytewise.
std::vector<CallStats> compute_call_stats(const Profile& profile,
                                          CumulativeMode mode = CumulativeMode::OncePerStack);

// Stats of one function (whether or not it was sampled).
CallStats function_stats(const Profile& profile, FunctionId f,
                         CumulativeMode mode = CumulativeMode::OncePerStack);

}  // namespace scriptprof
