#include "scriptprof/hidden_functions.hpp"

#include <algorithm>

namespace scriptprof {

bool named_in(const Profile& p, FunctionId f, const std::vector<std::string>& names) {
  const std::string& name = p.functions.info(f).name;
  const std::string& label = p.functions.label(f);
  return std::find(names.begin(), names.end(), name) != names.end() ||
         std::find(names.begin(), names.end(), label) != names.end();
}

bool in_package(const Profile& p, FunctionId f, const std::vector<std::string>& prefixes) {
  const FunctionInfo& info = p.functions.info(f);
  for (const std::string& prefix : prefixes) {
    if (prefix.empty()) continue;
    if (info.file.compare(0, prefix.size(), prefix) == 0 || info.name.compare(0, prefix.size(), prefix) == 0)
      return true;
  }
  return false;
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

  std::vector<FunctionId> kept;
  for_each_sample_path(p, [&](std::uint32_t thread, NodeId, const CallTreeNode& node, const std::vector<FunctionId>& stack) {
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
    q.add_sample(thread, 0, node.self, kept.data(), kept.size());
  });
  return out;
}

}  // namespace scriptprof
