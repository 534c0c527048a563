#include "scriptprof/profile_merge.hpp"

#include <map>
#include <optional>
#include <tuple>

namespace scriptprof {

namespace {

using FunctionKey = std::tuple<FunctionKind, std::string, std::string, int, int>;

FunctionKey key_of(const FunctionInfo& f) { return {f.kind, f.name, f.file, f.line, f.last_line}; }

}  // namespace

void merge_profile(Profile* into, const Profile& from) {
  const bool first = into->sample_weight() == 0 && into->functions.size() == 0 && into->threads.empty();
  if (first) {
    into->name = from.name;
    into->clock = from.clock;
    into->period_ns = from.period_ns;
    into->keep_samples = from.keep_samples;
    into->start_unix_ns = from.start_unix_ns;
  } else {
    into->keep_samples = into->keep_samples && from.keep_samples;
    if (from.start_unix_ns && (!into->start_unix_ns || from.start_unix_ns < into->start_unix_ns))
      into->start_unix_ns = from.start_unix_ns;
  }
  if (!into->keep_samples) into->samples.clear();

  std::map<FunctionKey, FunctionId> existing;
  for (FunctionId f = 0; f < into->functions.size(); ++f) existing.emplace(key_of(into->functions.info(f)), f);
  std::vector<FunctionId> remap(from.functions.size());
  for (FunctionId f = 0; f < from.functions.size(); ++f) {
    const FunctionInfo& info = from.functions.info(f);
    auto [it, fresh] = existing.emplace(key_of(info), kNoFunction);
    if (fresh) it->second = into->add_function(info);
    remap[f] = it->second;
  }
  for (const ThreadInfo& t : from.threads) into->add_thread(t.id, t.name, t.os_thread);

  std::vector<FunctionId> frames;
  auto mapped = [&](std::vector<FunctionId> stack) {
    for (FunctionId& f : stack) f = remap[f];
    return stack;
  };
  if (into->keep_samples) {
    for (const SampleRecord& s : from.samples) {
      frames = mapped(from.tree.stack(s.leaf));
      into->add_sample(s.thread, s.t_ns, s.weight, frames.data(), frames.size());
    }
  } else {
    for_each_sample_path(from, [&](std::uint32_t thread, NodeId id, const CallTreeNode& node,
                                   const std::vector<FunctionId>& stack) {
      frames = mapped(stack);
      const NodeId leaf = into->add_sample(thread, 0, node.self, frames.data(), frames.size());
      // A JIT runtime's shares stay with their path (the jit label of a served host's states).
      if (const std::optional<std::uint64_t> compiled = from.compiled_at(from.tree, id)) {
        into->add_jit_share(leaf, node.self - *compiled, false);
        if (*compiled) into->add_jit_share(leaf, *compiled, true);
      }
    });
  }

  if (from.calls_counted()) into->enable_call_counts();
  for (FunctionId f = 0; f < from.functions.size(); ++f) {
    const FunctionCounts& c = from.counts(f);
    if (c.calls) {
      const FunctionCounts& mine = into->counts(remap[f]);
      into->set_calls(remap[f], mine.calls.value_or(0) + *c.calls, mine.self_calls + c.self_calls);
    }
    for (const auto& [caller, n] : from.callers(f)) into->add_arc_calls(remap[caller], remap[f], n);
  }
  into->frame_marks.insert(into->frame_marks.end(), from.frame_marks.begin(), from.frame_marks.end());
  into->total_seconds += from.total_seconds;
  into->gc_seconds += from.gc_seconds;
  into->gc_measured = into->gc_measured && from.gc_measured;
  SamplerHealth& h = into->health;
  h.signals += from.health.signals;
  h.samples_taken += from.health.samples_taken;
  h.ticks_merged += from.health.ticks_merged;
  h.dropped += from.health.dropped;
  h.excluded += from.health.excluded;
  h.no_room += from.health.no_room;
  h.counting_lifts += from.health.counting_lifts;
  h.limit_reached = h.limit_reached || from.health.limit_reached;
  h.off_cpu += from.health.off_cpu;
  if (h.internals.empty()) h.internals = from.health.internals;
  if (h.timer.empty()) h.timer = from.health.timer;
  if (h.signal_lost_at < 0 && from.health.signal_lost_at >= 0) {
    h.signal_lost_at = from.health.signal_lost_at;
    h.signal_name = from.health.signal_name;
  }
}

}  // namespace scriptprof
