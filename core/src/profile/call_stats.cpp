#include "scriptprof/call_stats.hpp"

#include <algorithm>

namespace scriptprof {

double seconds_per_sample(const Profile& p) {
  std::uint64_t n = p.sample_weight();
  return n == 0 ? 0.0 : p.total_seconds / static_cast<double>(n);
}

CallStats function_stats(const Profile& p, FunctionId f, CumulativeMode mode) {
  const FunctionCounts& c = p.counts(f);
  double spp = seconds_per_sample(p);
  std::uint64_t n = p.sample_weight();
  CallStats s;
  s.function = f;
  s.self_samples = c.self;
  s.cum_samples = mode == CumulativeMode::OncePerStack ? c.cumulative : c.occurrences;
  s.pct_time = n == 0 ? 0.0 : 100.0 * static_cast<double>(c.self) / static_cast<double>(n);
  s.cum_secs = static_cast<double>(s.cum_samples) * spp;
  s.self_secs = static_cast<double>(s.self_samples) * spp;
  s.calls = c.calls;
  if (c.calls) {
    s.self_secs_per_call = *c.calls == 0 ? 0.0 : s.self_secs / static_cast<double>(*c.calls);
    s.cum_secs_per_call = s.cum_secs / static_cast<double>(std::max<std::uint64_t>(*c.calls, 1));
  } else {
    s.cum_secs_per_call = s.cum_secs;
  }
  return s;
}

std::vector<CallStats> compute_call_stats(const Profile& p, CumulativeMode mode) {
  std::vector<CallStats> out;
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    const FunctionCounts& c = p.counts(f);
    if (c.cumulative == 0 && c.calls.value_or(0) == 0) continue;
    out.push_back(function_stats(p, f, mode));
  }
  std::sort(out.begin(), out.end(), [&](const CallStats& a, const CallStats& b) {
    if (a.self_samples != b.self_samples) return a.self_samples > b.self_samples;
    if (a.cum_samples != b.cum_samples) return a.cum_samples > b.cum_samples;
    return p.functions.label(a.function) < p.functions.label(b.function);
  });
  return out;
}

}  // namespace scriptprof
