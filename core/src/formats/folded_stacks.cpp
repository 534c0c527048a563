#include "scriptprof/folded_stacks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "string_id_index.hpp"
#include "text_util.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A frame as flamegraph.pl can read it back (FORMATS.md 7.4), lossy: files without the
// escape mark (written without the time line) keep this older form.
std::string folded_frame_plain(std::string s, bool leaf) {
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

// Where the part of a leaf frame that a reader would take for counts starts: the last run of
// whitespace followed only by digits, dots and whitespace (s.size() when there is none).
std::size_t count_like_tail(std::string_view s) {
  std::size_t i = s.size(), tail = s.size();
  while (i > 0 && (is_digit(s[i - 1]) || s[i - 1] == '.' || is_space(s[i - 1]))) {
    --i;
    if (is_space(s[i])) tail = i;
  }
  return tail;
}

// A frame in the escaped form (FORMATS.md 7.4): '%' as %25 and what would break the line or
// the stack as %XX (';', LF, CR; a first frame's leading '#', a leaf's whitespace before
// what reads as counts, a name that is exactly "(idle)"); everything else as it is, so a
// viewer shows ordinary names unchanged. Reads back byte for byte.
std::string folded_frame_escaped(std::string_view s, bool first, bool leaf) {
  static const char kHex[] = "0123456789ABCDEF";
  const std::size_t tail = leaf ? count_like_tail(s) : s.size();
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    bool escape = c == '%' || c == ';' || c == '\n' || c == '\r' || (first && i == 0 && c == '#') ||
                  (i >= tail && is_space(static_cast<char>(c))) || (s == "(idle)" && i == 0);
    if (escape) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Undoes folded_frame_escaped; false on a '%' not followed by two hex digits.
bool unescape_frame(std::string_view s, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      *out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// The trailing "whitespace number" of `s`, if any: its value and where the whitespace starts;
// `whole` (when asked): the value exactly when it is a whole number that fits, else nothing (a
// double holds whole numbers exactly only to 2^53).
bool trailing_number(std::string_view s, double* value, std::size_t* start,
                     std::optional<std::uint64_t>* whole = nullptr) {
  std::size_t end = s.size();
  std::size_t i = end;
  while (i > 0 && (is_digit(s[i - 1]) || s[i - 1] == '.')) --i;
  if (i == end || i == 0 || !is_space(s[i - 1])) return false;
  std::string_view num = s.substr(i);
  if (!is_digit(num[0]) || std::count(num.begin(), num.end(), '.') > 1) return false;
  *value = std::strtod(std::string(num).c_str(), nullptr);
  if (whole) {
    std::uint64_t v = 0;
    const auto [end_ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    *whole = ec == std::errc() && end_ptr == num.data() + num.size() ? std::optional<std::uint64_t>(v) : std::nullopt;
  }
  std::size_t ws = i;
  while (ws > 0 && is_space(s[ws - 1])) --ws;
  *start = ws;
  return true;
}

}  // namespace

std::string write_folded(const Profile& p, const FoldedWriteOptions& o) {
  const bool escaped = o.time_scale;  // the escape mark rides on the time line
  auto frame_text = [&](const std::string& label, bool first, bool leaf) {
    return escaped ? folded_frame_escaped(label, first, leaf) : folded_frame_plain(label, leaf);
  };
  // Every line's stack back to back in one text, sorted bytewise and duplicates added up at the
  // end: a line costs its bytes and one entry, where a map of strings cost a node and a copy.
  struct Line { std::size_t at; std::size_t length; std::uint64_t count; };
  std::string text;
  std::vector<Line> lines;
  auto end_line = [&](std::size_t start, std::uint64_t count) { lines.push_back({start, text.size() - start, count}); };
  // Depth first with one prefix string, cut back to its parent's length on the way up: each
  // frame is written once, so the cost is the output's size (a deep stack's prefix is never
  // copied per frame). A node's next sibling waits under its first child, so the work list
  // holds a node per level, never a node's every child (a million: 24 MB).
  struct Item { NodeId node; std::size_t prefix_length; bool first; };
  std::vector<Item> todo;
  std::string prefix;
  for (const auto& r : p.tree.roots()) {
    std::string root = o.thread_root ? frame_text(thread_label(p, r.second), true, false) : "";
    todo.push_back({r.second, std::string::npos, true});
    while (!todo.empty()) {
      Item it = todo.back();
      todo.pop_back();
      const CallTreeNode& node = p.tree.node(it.node);
      if (it.prefix_length != std::string::npos && node.next_sibling != kNoNode)
        todo.push_back({node.next_sibling, it.prefix_length, it.first});
      bool first_below = it.first;
      if (it.prefix_length == std::string::npos) {  // the thread's root
        prefix = root;
        first_below = root.empty();
      } else {
        prefix.resize(it.prefix_length);
        if (!prefix.empty()) prefix += ';';
        first_below = false;
      }
      const std::size_t at = prefix.size();
      if (it.prefix_length != std::string::npos) prefix += frame_text(p.functions.label(node.function), it.first, false);
      if (node.self > 0) {
        if (node.function != kNoFunction) {
          // The leaf frame needs the count guard: write it again as a leaf.
          const std::size_t start = text.size();
          text.append(prefix, 0, at);
          text += frame_text(p.functions.label(node.function), it.first, true);
          end_line(start, node.self);
        } else if (o.idle_frame) {
          const std::size_t start = text.size();
          text += prefix;
          text += prefix.empty() ? "(idle)" : ";(idle)";
          end_line(start, node.self);
        }
      }
      if (node.first_child != kNoNode) todo.push_back({node.first_child, prefix.size(), first_below});
    }
  }
  auto view = [&](const Line& l) { return std::string_view(text).substr(l.at, l.length); };
  std::sort(lines.begin(), lines.end(), [&](const Line& a, const Line& b) { return view(a) < view(b); });
  std::size_t kept = 0;  // equal stacks (two threads' roots left out) add up
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (kept > 0 && view(lines[kept - 1]) == view(lines[i])) lines[kept - 1].count += lines[i].count;
    else lines[kept++] = lines[i];
  }
  lines.resize(kept);
  std::string out = o.time_scale ? "# " + time_scale_text(p) + " escape=percent\n" : "";
  std::size_t size = out.size();
  char digits[24];
  auto count_text = [&](std::uint64_t n) {
    return std::string_view(digits, static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, n).ptr - digits));
  };
  for (const Line& l : lines) size += l.length + count_text(l.count).size() + 2;  // a space, a newline
  out.reserve(size);
  for (const Line& l : lines) {
    out += view(l);
    out += ' ';
    out += count_text(l.count);
    out += '\n';
  }
  return out;
}

bool read_folded(std::string_view text, Profile* out, std::string* error,
                 std::vector<std::string>* warnings, std::uint64_t period_ns) {
  *out = Profile{};
  out->clock = ClockKind::Cpu;
  TimeScale scale;
  auto name_of = [out](std::uint32_t id) -> const std::string& { return out->functions.info(id).name; };
  StringIdIndex<decltype(name_of)> ids(name_of);  // the functions by name
  std::vector<FunctionId> frames;
  std::size_t line_no = 0, pos = 0;
  std::string_view line;
  bool escaped = false;  // set by the time line's escape=percent
  std::string name;
  while (next_line(text, &pos, &line)) {
    ++line_no;
    if (line.empty()) continue;
    if (line.rfind("# scriptprof ", 0) == 0) {
      scale = parse_time_scale(line.substr(2));
      escaped = (std::string(line) + " ").find(" escape=percent ") != std::string::npos;
      continue;
    }
    double count = 0, first = 0;
    std::size_t start = 0, start2 = 0;
    // Escaped, a line " 5" is one frame named "" (a name of spaces is escaped).
    std::optional<std::uint64_t> whole;
    if (!trailing_number(line, &count, &start, &whole) || (start == 0 && !escaped)) {
      if (error) *error = "line " + std::to_string(line_no) + ": expected \"frame;frame;... count\", got \"" +
                          std::string(line.substr(0, 80)) + "\"";
      return false;
    }
    std::string_view stack = line.substr(0, start);
    if (trailing_number(stack, &first, &start2) && start2 > 0) stack = stack.substr(0, start2);  // differential
    if (count != std::floor(count) && warnings)
      warnings->push_back("line " + std::to_string(line_no) + ": count " + std::to_string(count) + " rounded");
    std::uint64_t weight = whole ? std::min(*whole, Profile::kMaxTotalWeight + 1)
                           : count < 4.6e18 ? static_cast<std::uint64_t>(std::llround(count))
                                            : Profile::kMaxTotalWeight + 1;
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
        std::string_view raw = stack.substr(fpos, semi == std::string_view::npos ? std::string_view::npos : semi - fpos);
        if (escaped && !unescape_frame(raw, &name)) {
          if (error) *error = "line " + std::to_string(line_no) + ": a '%' not followed by two hex digits in frame \"" +
                              std::string(raw.substr(0, 80)) + "\"";
          return false;
        }
        const std::string_view frame = escaped ? std::string_view(name) : raw;
        FunctionId id = ids.find(frame);
        if (id == ids.kNone) {
          FunctionInfo info;
          info.name = std::string(frame);
          info.kind = raw == "(idle)" ? FunctionKind::Pseudo : FunctionKind::Named;
          id = out->add_function(std::move(info));
          ids.insert(id);
        }
        frames.push_back(id);
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
