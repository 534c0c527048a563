#include "scriptprof/timeline.hpp"

#include <algorithm>
#include <cmath>

#include "scriptprof/call_stats.hpp"

namespace scriptprof {

std::vector<std::uint32_t> sampled_threads(const Profile& p) {
  std::vector<std::uint32_t> out;
  for (const SampleRecord& r : p.samples)
    if (std::find(out.begin(), out.end(), r.thread) == out.end()) out.push_back(r.thread);
  return out;
}

std::vector<TimelineEvent> thread_timeline(const Profile& p, std::uint32_t thread) {
  std::vector<SampleRecord> samples;
  for (const SampleRecord& r : p.samples)
    if (r.thread == thread) samples.push_back(r);
  std::stable_sort(samples.begin(), samples.end(),
                   [](const SampleRecord& a, const SampleRecord& b) { return a.t_ns < b.t_ns; });
  std::vector<TimelineEvent> out;
  std::vector<FunctionId> open;  // the stack currently open, root first
  auto move_to = [&](const std::vector<FunctionId>& next, std::uint64_t t) {
    std::size_t common = 0;
    while (common < open.size() && common < next.size() && open[common] == next[common]) ++common;
    for (std::size_t i = open.size(); i-- > common;) out.push_back({false, open[i], t});
    for (std::size_t i = common; i < next.size(); ++i) out.push_back({true, next[i], t});
    open = next;
  };
  // Each sample lasts the time its weight stands for in the reports (weight x measured
  // seconds per sample), laid end to end from the first sample's stamp, so the seconds a
  // timeline shows per function are the reports' (an lms file read back gives them again).
  // A stamp more than two periods past the end so far is a stretch where nothing known ran
  // (the run suspended, another thread's turn): the timeline jumps to it and leaves a gap.
  const double period = static_cast<double>(p.period_ns);
  const double spp_ns = seconds_per_sample(p) * 1e9;
  const double per_weight = spp_ns > 0 ? spp_ns : period;
  auto at = [](double t) { return static_cast<std::uint64_t>(std::llround(t)); };
  double cursor = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleRecord& s = samples[i];
    const auto stamp = static_cast<double>(s.t_ns);
    double start = cursor;
    if (i == 0 || stamp > cursor + 2 * period) {
      if (i > 0) move_to({}, at(cursor));
      start = stamp;
    }
    move_to(p.tree.stack(s.leaf), at(start));
    cursor = start + static_cast<double>(s.weight) * per_weight;
  }
  if (!samples.empty()) move_to({}, at(cursor));
  return out;
}

}  // namespace scriptprof
