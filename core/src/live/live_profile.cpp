#include "scriptprof/live_profile.hpp"

#include <cmath>
#include <map>

namespace scriptprof {

void LiveProfileBuilder::learn(const LiveFeed::Batch& batch) {
  for (const auto& [id, info] : batch.functions) {
    if (id >= functions_.size()) functions_.resize(id + 1);
    functions_[id] = info;
  }
  for (const auto& [id, name] : batch.renames)
    if (id < functions_.size()) functions_[id].name = name;
  for (const auto& thread : batch.threads) threads_.push_back(thread);
}

Profile LiveProfileBuilder::build(const LiveFeed::Batch& batch, const std::string& name, ClockKind clock,
                                  double seconds) const {
  Profile p;
  p.name = name;
  p.clock = clock;
  // The period most of the weight came at; a sample taken at another (a rate changed while
  // it waited) is scaled to it.
  std::map<std::uint64_t, std::uint64_t> by_period;
  for (const LiveFeed::Sample& s : batch.samples) by_period[s.period_ns] += s.ticks;
  std::uint64_t period = 0, most = 0;
  for (const auto& [ns, ticks] : by_period)
    if (ticks > most && ns > 0) period = ns, most = ticks;
  p.period_ns = period ? period : 10'000'000;
  for (const FunctionInfo& info : functions_) p.add_function(info);
  for (const auto& [id, thread_name] : threads_) p.add_thread(id, thread_name);
  for (const LiveFeed::Sample& s : batch.samples) {
    bool known = true;
    for (std::uint32_t i = 0; i < s.count; ++i) known = known && batch.frames[s.first + i] < functions_.size();
    if (!known) continue;  // cannot happen: a definition comes before its first sample
    std::uint64_t weight = s.ticks;
    if (s.period_ns != p.period_ns && s.period_ns > 0)
      weight = static_cast<std::uint64_t>(std::llround(static_cast<double>(s.ticks) *
                                                       static_cast<double>(s.period_ns) /
                                                       static_cast<double>(p.period_ns)));
    if (!weight) continue;
    const NodeId leaf = p.add_sample(s.thread, 0, weight, batch.frames.data() + s.first, s.count);
    if (s.jit) p.add_jit_share(leaf, weight, s.jit == 2);
  }
  p.total_seconds = seconds;
  p.health.dropped = batch.dropped;  // the feed was full: the reader fell behind
  return p;
}

}  // namespace scriptprof
