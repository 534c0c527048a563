#include "scriptprof/statprof_tree_report.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "scriptprof/call_stats.hpp"
#include "scriptprof/guile_number_format.hpp"
#include "statprof_footer.hpp"
#include "text_util.hpp"

namespace scriptprof {
namespace {

using Group = std::vector<FunctionId>;

// "name at file:line:0" in Guile's style, else the label.
std::string tree_label(const Profile& p, FunctionId f, LabelStyle style) {
  const FunctionInfo& info = p.functions.info(f);
  return one_line(style == LabelStyle::Guile && info.kind == FunctionKind::Script && !info.file.empty()
                      ? info.name + " at " + info.file + ":" + std::to_string(info.line) + ":0"
                      : p.functions.label(f));
}

struct TreeNode {
  std::string label;
  std::uint64_t count = 0;
  std::map<std::string, std::size_t> index;  // label -> child position
  std::vector<std::size_t> children;         // node ids in first-seen order
};

// Guile's two spaces a level, up to kMaxIndentLevels; deeper lines keep that indentation and
// say their level as "[N] ", so a 100,000-deep stack is not 10 GB of spaces.
constexpr std::size_t kMaxIndentLevels = 64;
std::string indentation(std::size_t depth) {
  if (depth <= kMaxIndentLevels) return std::string(2 * depth, ' ');
  return std::string(2 * kMaxIndentLevels, ' ') + "[" + std::to_string(depth) + "] ";
}

}  // namespace

std::vector<Group> collect_cycles(const std::vector<FunctionId>& stack) {
  std::vector<Group> e;
  // Where each function stands alone in e, oldest first: the most recent one is found at once,
  // not by a scan (a deep stack would make the scan quadratic).
  std::unordered_map<FunctionId, std::vector<std::size_t>> alone;
  auto cut_to = [&](std::size_t size) {
    for (std::size_t j = size; j < e.size(); ++j)
      if (e[j].size() == 1) alone[e[j][0]].pop_back();  // j is the newest place of e[j][0] left
    e.resize(size);
  };
  auto push = [&](Group g) {
    if (g.size() == 1) alone[g[0]].push_back(e.size());
    e.push_back(std::move(g));
  };
  std::size_t i = 0;
  while (i < stack.size()) {
    FunctionId x = stack[i++];
    auto places = alone.find(x);
    const std::size_t occ = places == alone.end() || places->second.empty() ? e.size() : places->second.back();
    bool cycle = false;
    if (occ < e.size()) {
      std::size_t k = e.size() - occ;  // entries from the occurrence to the top, inclusive
      if (2 * k - 1 <= e.size()) {
        cycle = true;
        for (std::size_t m = 1; m < k && cycle; ++m) cycle = e[occ + m] == e[occ - k + m];
        if (cycle) {
          Group g;
          for (std::size_t m = e.size(); m-- > occ + 1;) g.insert(g.end(), e[m].begin(), e[m].end());
          g.insert(g.end(), e[occ].begin(), e[occ].end());
          cut_to(e.size() - (2 * k - 1));
          push(std::move(g));
        }
      }
    }
    if (!cycle) push(Group{x});
    // Input that repeats the group just pushed, completely, adds nothing.
    const Group& g = e.back();
    while (i + g.size() <= stack.size() && std::equal(g.begin(), g.end(), stack.begin() + static_cast<std::ptrdiff_t>(i)))
      i += g.size();
  }
  return e;
}

std::string statprof_tree_report(const Profile& p, LabelStyle style) {
  // Every terminal path of the call tree is a set of identical samples: collapse it once.
  std::vector<TreeNode> nodes(1);  // nodes[0]: the virtual root
  for_each_sample_path(p, [&](std::uint32_t, NodeId, const CallTreeNode& node, const std::vector<FunctionId>& stack) {
    if (stack.empty()) return;
    std::size_t at = 0;
    nodes[0].count += node.self;
    for (const Group& g : collect_cycles(stack)) {
      std::string label;
      for (FunctionId f : g) label += (label.empty() ? "" : ", ") + tree_label(p, f, style);
      auto it = nodes[at].index.find(label);
      std::size_t child;
      if (it == nodes[at].index.end()) {
        child = nodes.size();
        nodes[at].index.emplace(label, child);
        nodes[at].children.push_back(child);
        TreeNode t;
        t.label = label;
        nodes.push_back(std::move(t));
      } else {
        child = it->second;
      }
      nodes[child].count += node.self;
      at = child;
    }
  });
  std::string out = limit_notice(p);
  const double total = static_cast<double>(p.sample_weight());
  // Depth-first, children by count descending, ties by label (FORMATS.md 1.5, ours).
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (node, depth)
  auto push_children = [&](std::size_t n, std::size_t depth) {
    std::vector<std::size_t> kids = nodes[n].children;
    std::sort(kids.begin(), kids.end(), [&](std::size_t a, std::size_t b) {
      if (nodes[a].count != nodes[b].count) return nodes[a].count > nodes[b].count;
      return nodes[a].label < nodes[b].label;
    });
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.emplace_back(*it, depth);
  };
  push_children(0, 0);
  while (!stack.empty()) {
    auto [n, depth] = stack.back();
    stack.pop_back();
    out += indentation(depth) + guile_fixed(100.0 * static_cast<double>(nodes[n].count) / total, 0, 1) +
           "% " + nodes[n].label + "\n";
    push_children(n, depth + 1);
  }
  return visible_text(out + statprof_footer(p));
}

std::string statprof_anomalies_report(const Profile& p, LabelStyle style) {
  std::string out;
  if (p.calls_counted()) {
    for (const CallStats& s : compute_call_stats(p))
      if (s.calls && *s.calls == 0 && s.cum_samples > 0)
        out += "==[" + report_label(p, s.function, style) + " 0 " + std::to_string(s.cum_samples) + "]\n";
  }
  out += "Total time: " + report_seconds(p.total_seconds) + "\n";
  out += "Sample count: " + std::to_string(p.sample_weight()) + "\n";
  return visible_text(out);
}

}  // namespace scriptprof
