// A profile's function by its name, for the adapters' tests: kNoFunction when there is none;
// and the weight of the samples whose whole stack is that function.
#pragma once
#include <cstdint>
#include <string>

#include "scriptprof/profile.hpp"

namespace scriptprof::test {

inline FunctionId function_named(const Profile& p, const std::string& name) {
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.functions.info(f).name == name) return f;
  return kNoFunction;
}

// Self weight of `f` standing alone at a process's root (a "(blocked)" whose stack is unknown).
inline std::uint64_t self_at_root(const Profile& p, FunctionId f) {
  std::uint64_t weight = 0;
  for (NodeId n = 0; n < p.tree.size(); ++n)
    if (p.tree.node(n).depth == 1 && p.tree.node(n).function == f) weight += p.tree.node(n).self;
  return weight;
}

// The self weight of f's nodes that have `ancestor`'s function somewhere above them.
inline std::uint64_t self_under(const Profile& p, FunctionId f, FunctionId ancestor) {
  std::uint64_t weight = 0;
  for (NodeId n = 0; n < p.tree.size(); ++n) {
    if (p.tree.node(n).function != f) continue;
    for (NodeId up = p.tree.node(n).parent; up != scriptprof::kNoNode; up = p.tree.node(up).parent)
      if (p.tree.node(up).function == ancestor) {
        weight += p.tree.node(n).self;
        break;
      }
  }
  return weight;
}

}  // namespace scriptprof::test
