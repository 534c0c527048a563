#include "scriptprof/hidden_functions.hpp"

#include <algorithm>

namespace scriptprof {

bool named_in(const Profile& p, FunctionId f, const std::vector<std::string>& names) {
  const std::string& name = p.functions.info(f).name;
  const std::string& label = p.functions.label(f);
  return std::find(names.begin(), names.end(), name) != names.end() ||
         std::find(names.begin(), names.end(), label) != names.end();
}

HiddenFolding fold_hidden(const Profile& p, const std::function<bool(FunctionId)>& hidden) {
  HiddenFolding out;
  Profile& q = out.profile;
  q.name = p.name;
  q.clock = p.clock;
  q.period_ns = p.period_ns;
  q.total_seconds = p.total_seconds;
  q.gc_seconds = p.gc_seconds;
  q.start_unix_ns = p.start_unix_ns;
  q.threads = p.threads;
  for (FunctionId f = 0; f < p.functions.size(); ++f) q.add_function(p.functions.info(f));
  if (p.calls_counted()) {
    q.enable_call_counts();
    for (FunctionId f = 0; f < p.functions.size(); ++f) q.set_calls(f, p.counts(f).calls, p.counts(f).self_calls);
  }
  out.called_hidden.assign(p.functions.size(), false);
  std::vector<bool> is_hidden(p.functions.size());
  for (FunctionId f = 0; f < p.functions.size(); ++f) is_hidden[f] = hidden(f);

  std::vector<std::pair<NodeId, std::vector<FunctionId>>> todo;
  for (const auto& r : p.tree.roots()) todo.push_back({r.second, {}});
  std::vector<FunctionId> kept;
  while (!todo.empty()) {
    auto [n, stack] = std::move(todo.back());
    todo.pop_back();
    const CallTreeNode& node = p.tree.node(n);
    if (node.self > 0) {
      kept.clear();
      bool leaf_hidden = false;
      for (std::size_t j = 0; j < stack.size(); ++j) {
        if (is_hidden[stack[j]]) {
          if (!kept.empty()) out.called_hidden[kept.back()] = true;
          leaf_hidden = j + 1 == stack.size() || leaf_hidden;
          continue;
        }
        leaf_hidden = false;
        kept.push_back(stack[j]);
      }
      if (leaf_hidden && !kept.empty()) out.hidden_leaf[kept.back()] += node.self;
      std::uint32_t thread = 0;
      for (NodeId k = n; k != kNoNode; k = p.tree.node(k).parent)
        if (p.tree.node(k).parent == kNoNode)
          for (const auto& r : p.tree.roots())
            if (r.second == k) thread = r.first;
      q.add_sample(thread, 0, node.self, kept.data(), kept.size());
    }
    for (NodeId c = node.first_child; c != kNoNode; c = p.tree.node(c).next_sibling) {
      std::vector<FunctionId> s = stack;
      s.push_back(p.tree.node(c).function);
      todo.push_back({c, std::move(s)});
    }
  }
  return out;
}

}  // namespace scriptprof
