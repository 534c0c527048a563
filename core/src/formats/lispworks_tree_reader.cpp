#include <charconv>
#include <cstdlib>
#include <deque>
#include <optional>
#include <unordered_map>

#include "scriptprof/lispworks_tree.hpp"

#include "text_util.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {

struct Node {
  std::size_t line;       // 1-based line number, for messages
  std::size_t depth;
  std::uint64_t count, calls, seen, top;
  std::string_view name;  // into the text, or into `decoded` for a quoted name
  bool quoted;            // a non-function node ("...")
  std::uint64_t children = 0;  // sum of the children's counts
};

std::string at(std::size_t line, const std::string& what) {
  return "line " + std::to_string(line) + ": " + what;
}

// A Common Lisp string: "..." with \x standing for x. The whole name must be the string.
bool parse_quoted(std::string_view s, std::string* out) {
  out->clear();
  for (std::size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\') {
      if (++i >= s.size()) return false;
      *out += s[i];
    } else if (c == '"') {
      return i + 1 == s.size();
    } else {
      *out += c;
    }
  }
  return false;  // no closing quote
}

bool is_thread_name(std::string_view name, std::uint32_t* id, std::string* thread_name) {
  if (name.substr(0, 7) != "thread ") return false;
  std::size_t colon = name.find(':');
  std::string_view digits = name.substr(7, colon == std::string_view::npos ? std::string_view::npos : colon - 7);
  std::uint64_t v;
  if (!parse_u64(digits, &v) || v > UINT32_MAX) return false;
  *id = static_cast<std::uint32_t>(v);
  *thread_name = colon == std::string_view::npos ? "" : std::string(name.substr(std::min(name.size(), colon + 2)));
  return true;
}

}  // namespace

bool read_lispworks_tree(std::string_view text, Profile* out, std::string* error,
                         std::vector<std::string>* warnings, const ReadLimits& limits) {
  auto fail = [&](std::string message) {
    if (error) *error = std::move(message);
    return false;
  };
  auto warn = [&](std::string message) {
    if (warnings) warnings->push_back(std::move(message));
  };
  *out = Profile{};
  TimeScale scale;
  std::optional<std::uint64_t> idle_weight;  // from our time line's idle=
  std::vector<Node> nodes;
  std::vector<std::size_t> open;  // open[d] = index of the last node at depth d
  std::deque<std::string> decoded;  // quoted names, unescaped (a deque: their views stay valid)
  std::string unquoted;

  std::size_t line_no = 0, pos = 0;
  std::string_view line;
  while (next_line(text, &pos, &line)) {
    ++line_no;
    if (line_no == 1) {
      if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 BOM
      if (line.find("LispWorks Profiler Tree") == std::string_view::npos)
        return fail(at(1, "not a LispWorks profiler tree (the first line must contain \"LispWorks Profiler Tree\")"));
      std::size_t colon = line.find(':');
      std::string_view name = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      out->name = std::string(name);
      continue;
    }
    if (line.empty()) continue;  // not defined by the format: skipped, never written
    if (line[0] == ';') {
      if (line.rfind(";scriptprof ", 0) == 0) {
        scale = parse_time_scale(line.substr(1));
        std::size_t at_idle = line.find(" idle=");
        std::uint64_t v = 0;
        if (at_idle != std::string_view::npos) {
          std::string_view digits = line.substr(at_idle + 6);
          digits = digits.substr(0, digits.find(' '));
          if (parse_u64(digits, &v)) idle_weight = v;
        }
      }
      continue;
    }
    Node n{};
    n.line = line_no;
    std::uint64_t* fields[5] = {nullptr, &n.count, &n.calls, &n.seen, &n.top};
    std::uint64_t depth = 0;
    fields[0] = &depth;
    static const char* kFieldNames[5] = {"Depth", "Count", "Call-Count", "Seen-Count", "Top-Count"};
    std::size_t field_start = 0;
    for (int f = 0; f < 5; ++f) {
      std::size_t bar = line.find('|', field_start);
      if (bar == std::string_view::npos)
        return fail(at(line_no, "expected 6 fields separated by '|' (Depth|Count|Call-Count|Seen-Count|Top-Count|Name), found " +
                                    std::to_string(f + 1)));
      if (!parse_u64(line.substr(field_start, bar - field_start), fields[f]))
        return fail(at(line_no, std::string(kFieldNames[f]) + " must be a non-negative decimal integer, got '" +
                                    std::string(line.substr(field_start, bar - field_start)) + "'"));
      field_start = bar + 1;
    }
    std::string_view name = line.substr(field_start);
    if (!name.empty() && name[0] == '"') {
      if (!parse_quoted(name, &unquoted)) return fail(at(line_no, "unterminated string name " + std::string(name)));
      n.name = decoded.emplace_back(std::move(unquoted));
      n.quoted = true;
    } else {
      if (!name.empty() && name[0] == '\\') name.remove_prefix(1);
      n.name = name;
    }
    if (depth > limits.max_depth)
      return fail(at(line_no, "depth " + std::to_string(depth) + " exceeds the limit of " +
                                  std::to_string(limits.max_depth)));
    n.depth = static_cast<std::size_t>(depth);
    if (nodes.empty()) {
      if (n.depth != 0) return fail(at(line_no, "the first node must have depth 0 (the root), got " + std::to_string(depth)));
    } else {
      if (n.depth == 0) return fail(at(line_no, "a second root (depth 0)"));
      std::size_t prev = nodes.back().depth;
      if (n.depth > prev + 1)
        return fail(at(line_no, "depth " + std::to_string(depth) + " after depth " + std::to_string(prev) +
                                    " (a node's parent must precede it)"));
      nodes[open[n.depth - 1]].children += n.count;
    }
    open.resize(n.depth);
    open.push_back(nodes.size());
    nodes.push_back(std::move(n));
  }
  if (line_no == 0) return fail("empty file: not a LispWorks profiler tree");
  // Our writer ends every line with LF: a file of ours (it has the time line) that does not
  // was cut inside its last line, where a cut name can look like a whole one.
  if (scale.found && text.back() != '\n')
    return fail(at(line_no, "the file ends inside a line (no LF after it): cut short"));
  if (nodes.empty()) return fail(at(line_no, "no root node"));

  // Thread level: every depth-1 node is a quoted "thread N: name".
  bool thread_level = false;
  {
    bool all = true, any = false;
    std::uint32_t id;
    std::string tn;
    for (const Node& n : nodes)
      if (n.depth == 1) {
        any = true;
        all = all && n.quoted && is_thread_name(n.name, &id, &tn);
      }
    thread_level = any && all;
  }

  // Rebuild weighted samples: a node's self weight is its count less its children's.
  std::unordered_map<std::string_view, FunctionId> ids[2];  // by name: functions, quoted nodes
  std::vector<const Node*> info_of;  // first node seen per function
  std::vector<std::uint64_t> top_weight;  // per function: the self weight its nodes hold
  std::vector<std::size_t> last_line;     // per function: its last node's line
  std::vector<FunctionId> path;
  std::uint32_t thread = 0, next_thread = 0;
  bool any_calls = false;
  for (const Node& n : nodes) {
    if (n.children > n.count)
      warn(at(n.line, "children's counts add up to " + std::to_string(n.children) + ", above the node's " +
                          std::to_string(n.count)));
    std::uint64_t self = n.count > n.children ? n.count - n.children : 0;
    std::size_t fdepth;  // depth among function frames
    if (!out->weight_fits(self)) return fail(at(n.line, "counts add up to more than 2^62"));
    if (n.depth == 0) {
      // Weight outside every thread node is kept too, as samples outside any function.
      if (self > 0) out->add_sample(thread, 0, self, nullptr, 0);
      continue;
    }
    if (thread_level && n.depth == 1) {
      std::string tn;
      if (!is_thread_name(n.name, &thread, &tn)) thread = next_thread;
      next_thread = thread + 1;
      out->add_thread(thread, tn);
      if (self > 0) out->add_sample(thread, 0, self, nullptr, 0);
      path.clear();
      continue;
    }
    fdepth = n.depth - (thread_level ? 2 : 1);
    auto& by_name = ids[n.quoted ? 1 : 0];
    auto it = by_name.find(n.name);
    FunctionId f;
    if (it == by_name.end()) {
      FunctionInfo info;
      info.name = std::string(n.name);
      info.kind = n.quoted ? FunctionKind::Pseudo : FunctionKind::Named;
      f = out->add_function(std::move(info));
      by_name.emplace(n.name, f);
      info_of.push_back(&n);
      top_weight.push_back(0);
      last_line.push_back(0);
    } else {
      f = it->second;
      const Node& first = *info_of[f];
      if (first.calls != n.calls || first.seen != n.seen || first.top != n.top)
        warn(at(n.line, "the function info of " + std::string(n.name) + " differs from line " + std::to_string(first.line)));
    }
    any_calls = any_calls || n.calls > 0;
    top_weight[f] += self;
    last_line[f] = n.line;
    path.resize(fdepth);
    path.push_back(f);
    if (self > 0) out->add_sample(thread, 0, self, path.data(), path.size());
  }
  // Top-Count is the weight a function's nodes leave at the top of the stack. A file cut short
  // (at a line end, or inside a name) or altered leaves some other weight there: refuse it,
  // naming the mismatch nearest the end, where the cut most likely is.
  std::size_t worst = info_of.size();
  for (FunctionId f = 0; f < info_of.size(); ++f)
    if (top_weight[f] != info_of[f]->top && (worst == info_of.size() || last_line[f] > last_line[worst])) worst = f;
  if (worst < info_of.size())
    return fail(at(last_line[worst], "the nodes of " + std::string(info_of[worst]->name) + " leave " +
                                         std::to_string(top_weight[worst]) + " at the top of the stack, but its Top-Count is " +
                                         std::to_string(info_of[worst]->top) + ": the file is cut short or altered"));
  // A file of ours says how much weight lies outside any function: a root that holds more
  // lost the nodes below it.
  if (idle_weight && *idle_weight != out->empty_weight())
    return fail(at(nodes.back().line, "the root holds " + std::to_string(out->empty_weight()) +
                                          " outside any function where the file says " + std::to_string(*idle_weight) +
                                          ": the file is cut short or altered"));
  if (any_calls) {
    out->enable_call_counts();
    for (FunctionId f = 0; f < info_of.size(); ++f) out->set_calls(f, info_of[f]->calls);
  }
  // LispWorks' own trees carry no time: its default interval, 10 ms, and a warning.
  if (std::string guess = apply_time_scale(scale, out, 10'000'000); !guess.empty()) warn(guess);
  const Node& root = nodes[0];
  if (root.count != out->sample_weight())
    warn(at(root.line, "the root's count " + std::to_string(root.count) + " differs from the samples below it (" +
                           std::to_string(out->sample_weight()) + ")"));
  return true;
}

}  // namespace scriptprof
