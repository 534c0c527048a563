#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "scriptprof/lispworks_tree.hpp"

#include "text_util.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {

// A non-function node: a Common Lisp string, with \ and " escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : one_line(s)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A function name that starts like a string (or an escape) gets one leading backslash.
std::string function_name(const std::string& label) {
  std::string s = one_line(label);
  if (!s.empty() && (s[0] == '"' || s[0] == '\\')) s.insert(s.begin(), '\\');
  return s;
}

void line(std::string& out, std::size_t depth, std::uint64_t count, std::uint64_t calls,
          std::uint64_t seen, std::uint64_t top, const std::string& name) {
  out += std::to_string(depth) + "|" + std::to_string(count) + "|" + std::to_string(calls) + "|" +
         std::to_string(seen) + "|" + std::to_string(top) + "|" + name + "\n";
}

}  // namespace

std::string write_lispworks_tree(const Profile& p, const LispWorksWriteOptions& o) {
  std::string name = !o.tree_name.empty() ? o.tree_name : !p.name.empty() ? p.name : "scriptprof";
  std::string out = "LispWorks Profiler Tree: " + one_line(name) + "\n";
  out += ";Depth|Count|Call-Count|Seen-Count|Top-Count|Name\n";
  if (o.metadata) {
    // idle=: the weight outside any function, which the root (or thread) nodes hold as their
    // own; with it a reader can tell a file cut below the root from one with idle samples.
    out += ";" + time_scale_text(p) + " idle=" + std::to_string(p.empty_weight()) + "\n";
  }
  const std::uint64_t n = p.sample_weight();
  line(out, 0, n, 0, n, 0, quoted(name));
  // A top-level pseudo frame named like a thread node ("thread 1: x") would read back as a
  // thread level: write the thread level then, so the file says what it means.
  bool ambiguous = false;
  for (const auto& r : p.tree.roots())
    for (NodeId c = p.tree.node(r.second).first_child; c != kNoNode; c = p.tree.node(c).next_sibling) {
      // Judged as written: a CR or LF in the name becomes a space there ("thread\r1").
      const FunctionId f = p.tree.node(c).function;
      ambiguous = ambiguous || (p.functions.info(f).kind == FunctionKind::Pseudo &&
                                one_line(p.functions.label(f)).rfind("thread ", 0) == 0);
    }
  const bool thread_level = o.thread_level || ambiguous || p.tree.roots().size() > 1;
  // Each function's name as written, one per function: a reader knows a function by its name,
  // and writing a CR or LF as a space can make two labels one ("a\r1", "a 1"), whose counts it
  // would then add up. A name written already gets " #2" (then " #3"...), as labels do.
  std::vector<std::string> written(p.functions.size());
  std::unordered_set<std::string> taken;
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    const bool pseudo = p.functions.info(f).kind == FunctionKind::Pseudo;
    const std::string& label = p.functions.label(f);
    std::string as_written = pseudo ? quoted(label) : function_name(label);
    for (int k = 2; !taken.insert(as_written).second; ++k) {
      const std::string again = label + " #" + std::to_string(k);
      as_written = pseudo ? quoted(again) : function_name(again);
    }
    written[f] = std::move(as_written);
  }

  // Pre-order walk with an explicit stack: (node, depth of its children).
  std::vector<std::pair<NodeId, std::size_t>> todo;
  for (auto it = p.tree.roots().rbegin(); it != p.tree.roots().rend(); ++it) {
    NodeId root = it->second;
    if (thread_level) {
      todo.emplace_back(root, 1);  // printed as a quoted thread node below
    } else {
      auto kids = children_by_count(p, root);
      for (auto k = kids.rbegin(); k != kids.rend(); ++k) todo.emplace_back(*k, 1);
    }
  }
  while (!todo.empty()) {
    auto [node, depth] = todo.back();
    todo.pop_back();
    const CallTreeNode& n_ = p.tree.node(node);
    if (n_.function == kNoFunction) {
      line(out, depth, n_.count, 0, n_.count, 0, quoted(thread_label(p, node)));
    } else {
      const FunctionCounts& c = p.counts(n_.function);
      line(out, depth, n_.count, c.calls.value_or(0), c.cumulative, c.self, written[n_.function]);
    }
    auto kids = children_by_count(p, node);
    for (auto k = kids.rbegin(); k != kids.rend(); ++k) todo.emplace_back(*k, depth + 1);
  }
  return out;
}

}  // namespace scriptprof
