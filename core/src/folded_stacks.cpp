#include "scriptprof/folded_stacks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <unordered_map>

#include "text_util.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A frame as flamegraph.pl can read it back (FORMATS.md 7.4).
std::string folded_frame(std::string s, bool leaf) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
    if (c == ';') c = ':';
  }
  if (s.empty()) return "?";
  if (leaf) {
    // "worker 2" at the end of a line would read as a differential count: "worker_2".
    std::size_t end = s.size();
    while (end > 0 && is_digit(s[end - 1])) --end;
    if (end < s.size() && end > 0 && is_space(s[end - 1])) {
      std::size_t ws = end;
      while (ws > 0 && is_space(s[ws - 1])) --ws;
      s.replace(ws, end - ws, "_");
    }
  }
  return s;
}

// The trailing "whitespace number" of `s`, if any: its value and where the whitespace starts.
bool trailing_number(std::string_view s, double* value, std::size_t* start) {
  std::size_t end = s.size();
  std::size_t i = end;
  while (i > 0 && (is_digit(s[i - 1]) || s[i - 1] == '.')) --i;
  if (i == end || i == 0 || !is_space(s[i - 1])) return false;
  std::string_view num = s.substr(i);
  if (!is_digit(num[0]) || std::count(num.begin(), num.end(), '.') > 1) return false;
  *value = std::strtod(std::string(num).c_str(), nullptr);
  std::size_t ws = i;
  while (ws > 0 && is_space(s[ws - 1])) --ws;
  *start = ws;
  return true;
}

}  // namespace

std::string write_folded(const Profile& p, const FoldedWriteOptions& o) {
  std::map<std::string, std::uint64_t> lines;  // sorted bytewise, duplicates add up
  std::vector<std::pair<NodeId, std::string>> todo;
  for (const auto& r : p.tree.roots())
    todo.emplace_back(r.second, o.thread_root ? folded_frame(thread_label(p, r.second), false) : "");
  while (!todo.empty()) {
    auto [n, prefix] = todo.back();
    todo.pop_back();
    const CallTreeNode& node = p.tree.node(n);
    if (node.self > 0) {
      bool empty_stack = node.function == kNoFunction;
      if (!empty_stack) {
        // The leaf frame needs the trailing-number guard: rebuild it from its label.
        std::size_t cut = prefix.rfind(';');
        std::string head = cut == std::string::npos ? "" : prefix.substr(0, cut + 1);
        lines[head + folded_frame(p.functions.label(node.function), true)] += node.self;
      } else if (o.idle_frame) {
        lines[prefix.empty() ? "(idle)" : prefix + ";(idle)"] += node.self;
      }
    }
    for (NodeId c = node.first_child; c != kNoNode; c = p.tree.node(c).next_sibling) {
      std::string frame = folded_frame(p.functions.label(p.tree.node(c).function), false);
      todo.emplace_back(c, prefix.empty() ? frame : prefix + ";" + frame);
    }
  }
  std::string out = o.time_scale ? "# " + time_scale_text(p) + "\n" : "";
  for (const auto& [stack, count] : lines) out += stack + " " + std::to_string(count) + "\n";
  return out;
}

bool read_folded(std::string_view text, Profile* out, std::string* error,
                 std::vector<std::string>* warnings, std::uint64_t period_ns) {
  *out = Profile{};
  out->clock = ClockKind::Cpu;
  TimeScale scale;
  std::unordered_map<std::string, FunctionId> ids;
  std::vector<FunctionId> frames;
  std::size_t line_no = 0, pos = 0;
  std::string_view line;
  while (next_line(text, &pos, &line)) {
    ++line_no;
    if (line.empty()) continue;
    if (line.rfind("# scriptprof ", 0) == 0) {
      scale = parse_time_scale(line.substr(2));
      continue;
    }
    double count = 0, first = 0;
    std::size_t start = 0, start2 = 0;
    if (!trailing_number(line, &count, &start) || start == 0) {
      if (error) *error = "line " + std::to_string(line_no) + ": expected \"frame;frame;... count\", got \"" +
                          std::string(line.substr(0, 80)) + "\"";
      return false;
    }
    std::string_view stack = line.substr(0, start);
    if (trailing_number(stack, &first, &start2) && start2 > 0) stack = stack.substr(0, start2);  // differential
    if (count != std::floor(count) && warnings)
      warnings->push_back("line " + std::to_string(line_no) + ": count " + std::to_string(count) + " rounded");
    auto weight = count < 4.6e18 ? static_cast<std::uint64_t>(std::llround(count)) : Profile::kMaxTotalWeight + 1;
    if (!out->weight_fits(weight)) {
      if (error) *error = "line " + std::to_string(line_no) + ": counts add up to more than 2^62";
      return false;
    }
    if (weight == 0) continue;
    frames.clear();
    if (stack != "(idle)") {
      std::size_t fpos = 0;
      while (true) {
        std::size_t semi = stack.find(';', fpos);
        std::string frame(stack.substr(fpos, semi == std::string_view::npos ? std::string_view::npos : semi - fpos));
        auto it = ids.find(frame);
        if (it == ids.end()) {
          FunctionInfo info;
          info.name = frame;
          info.kind = frame == "(idle)" ? FunctionKind::Pseudo : FunctionKind::Named;
          it = ids.emplace(frame, out->add_function(std::move(info))).first;
        }
        frames.push_back(it->second);
        if (semi == std::string_view::npos) break;
        fpos = semi + 1;
      }
    }
    out->add_sample(0, 0, weight, frames.data(), frames.size());
  }
  if (std::string guess = apply_time_scale(scale, out, period_ns); !guess.empty() && warnings)
    warnings->push_back(guess);
  return true;
}

}  // namespace scriptprof
