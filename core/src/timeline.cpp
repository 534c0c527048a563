#include "scriptprof/timeline.hpp"

#include <algorithm>

namespace scriptprof {

std::vector<std::uint32_t> sampled_threads(const Profile& p) {
  std::vector<std::uint32_t> out;
  for (const SampleRecord& r : p.samples)
    if (std::find(out.begin(), out.end(), r.thread) == out.end()) out.push_back(r.thread);
  return out;
}

std::vector<TimelineEvent> thread_timeline(const Profile& p, std::uint32_t thread) {
  std::vector<const SampleRecord*> samples;
  for (const SampleRecord& r : p.samples)
    if (r.thread == thread) samples.push_back(&r);
  std::stable_sort(samples.begin(), samples.end(),
                   [](const SampleRecord* a, const SampleRecord* b) { return a->t_ns < b->t_ns; });
  std::vector<TimelineEvent> out;
  std::vector<FunctionId> open;  // the stack currently open, root first
  auto move_to = [&](const std::vector<FunctionId>& next, std::uint64_t t) {
    std::size_t common = 0;
    while (common < open.size() && common < next.size() && open[common] == next[common]) ++common;
    for (std::size_t i = open.size(); i-- > common;) out.push_back({false, open[i], t});
    for (std::size_t i = common; i < next.size(); ++i) out.push_back({true, next[i], t});
    open = next;
  };
  const std::uint64_t period = p.period_ns;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleRecord& s = *samples[i];
    move_to(p.tree.stack(s.leaf), s.t_ns);
    std::uint64_t end = s.t_ns + s.weight * period;
    if (i + 1 < samples.size()) {
      std::uint64_t next = samples[i + 1]->t_ns;
      if (next > end + period) move_to({}, end);  // a gap: nothing was known to run
    } else {
      move_to({}, end);
    }
  }
  return out;
}

}  // namespace scriptprof
