// Comparing two profiles by what reports can see: labels, counts, tree paths, calls, time.
#pragma once
#include <map>
#include <string>

#include "scriptprof/profile.hpp"

namespace scriptprof::test {

// Every call-tree path (joined labels, per thread name) with its count and self weight.
inline std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> paths(const Profile& p, bool with_threads) {
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> out;
  std::vector<std::pair<NodeId, std::string>> todo;
  // Threads are compared by position: formats number them afresh.
  std::size_t position = 0;
  for (const auto& r : p.tree.roots()) {
    std::string key = with_threads ? std::to_string(position++) : "";
    todo.emplace_back(r.second, key);
  }
  while (!todo.empty()) {
    auto [n, prefix] = todo.back();
    todo.pop_back();
    auto& slot = out[prefix];
    slot.first += p.tree.node(n).count;
    slot.second += p.tree.node(n).self;
    for (NodeId c = p.tree.node(n).first_child; c != kNoNode; c = p.tree.node(c).next_sibling)
      todo.emplace_back(c, prefix + "\x1f" + p.functions.label(p.tree.node(c).function));
  }
  return out;
}

// Empty when equivalent, else what differs first.
inline std::string difference(const Profile& a, const Profile& b, bool with_threads = true, bool times = true) {
  if (a.sample_weight() != b.sample_weight())
    return "samples " + std::to_string(a.sample_weight()) + " vs " + std::to_string(b.sample_weight());
  if (times && (a.period_ns != b.period_ns || a.total_seconds != b.total_seconds))
    return "time: " + std::to_string(a.total_seconds) + " vs " + std::to_string(b.total_seconds);
  std::map<std::string, const FunctionCounts*> fa, fb;
  for (FunctionId f = 0; f < a.functions.size(); ++f) fa[a.functions.label(f)] = &a.counts(f);
  for (FunctionId f = 0; f < b.functions.size(); ++f) fb[b.functions.label(f)] = &b.counts(f);
  for (const auto& [label, c] : fa) {
    auto it = fb.find(label);
    if (c->cumulative == 0 && c->calls.value_or(0) == 0) continue;  // never on a stack
    if (it == fb.end()) return "function missing after the round trip: " + label;
    if (it->second->self != c->self || it->second->cumulative != c->cumulative)
      return "counts of " + label;
    if (a.calls_counted() && it->second->calls.value_or(0) != c->calls.value_or(0)) return "calls of " + label;
  }
  if (paths(a, with_threads) != paths(b, with_threads)) return "call tree paths differ";
  return {};
}

}  // namespace scriptprof::test
