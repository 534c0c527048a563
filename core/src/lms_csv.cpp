#include <charconv>
#include <map>
#include <unordered_map>

#include "scriptprof/interval_formats.hpp"
#include "scriptprof/timeline.hpp"

#include "text_util.hpp"

namespace scriptprof {

bool write_lms_csv(const Profile& p, std::string* out, std::string* error) {
  if (!p.keep_samples) {
    if (error) *error = "lms CSV needs the samples in time order: profile with full stacks (full_stacks=true, --full-stacks)";
    return false;
  }
  std::vector<std::uint32_t> threads = sampled_threads(p);
  out->clear();
  if (threads.empty()) return true;
  std::unordered_map<FunctionId, std::size_t> ids;
  std::uint64_t last_us = 0;
  for (const TimelineEvent& e : thread_timeline(p, threads.front())) {
    auto [it, fresh] = ids.emplace(e.function, ids.size());
    if (fresh) {
      std::string name = p.functions.label(e.function);
      for (char& c : name)
        if (c == '\n' || c == '\r') c = ' ';
      *out += "2," + std::to_string(it->second) + "," + name + "\n";
    }
    // Round the absolute time first, then take differences: rounding never drifts.
    std::uint64_t us = (e.t_ns + 500) / 1000;
    *out += std::string(e.open ? "0," : "1,") + std::to_string(it->second) + "," + std::to_string(us - last_us) + "\n";
    last_us = us;
  }
  return true;
}

bool read_lms_csv(std::string_view text, Profile* out, std::string* error) {
  *out = Profile{};
  out->clock = ClockKind::Wall;
  out->period_ns = 1000;  // weights are microseconds
  out->keep_samples = true;
  auto fail = [&](std::size_t line, const std::string& what) {
    if (error) *error = "line " + std::to_string(line) + ": " + what;
    return false;
  };
  std::unordered_map<std::uint64_t, FunctionId> mapping;
  std::vector<std::pair<std::uint64_t, FunctionId>> open;  // (lms id, function), innermost last
  std::vector<FunctionId> stack;
  std::uint64_t now = 0, stretch_start = 0;
  std::size_t line_no = 0, pos = 0;
  auto flush = [&]() {  // the stretch since the last event, with the stack it had
    if (now > stretch_start && !stack.empty())
      out->add_sample(0, stretch_start * 1000, now - stretch_start, stack.data(), stack.size());
    stretch_start = now;
  };
  std::string_view line;
  while (next_line(text, &pos, &line)) {
    ++line_no;
    if (line.empty()) continue;
    std::size_t c1 = line.find(','), c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string_view::npos) return fail(line_no, "expected \"type,id,value\"");
    std::string_view type = line.substr(0, c1), id_text = line.substr(c1 + 1, c2 - c1 - 1), rest = line.substr(c2 + 1);
    std::uint64_t id = 0;
    auto r = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (id_text.empty() || r.ec != std::errc() || r.ptr != id_text.data() + id_text.size())
      return fail(line_no, "the id must be a non-negative integer, got '" + std::string(id_text) + "'");
    if (type == "2") {
      FunctionInfo info;
      info.name = std::string(rest);
      info.kind = FunctionKind::Named;
      mapping[id] = out->add_function(std::move(info));  // the last binding wins
      continue;
    }
    if (type != "0" && type != "1") return fail(line_no, "the type must be 0, 1 or 2, got '" + std::string(type) + "'");
    std::uint64_t diff = 0;
    r = std::from_chars(rest.data(), rest.data() + rest.size(), diff);
    if (rest.empty() || r.ec != std::errc() || r.ptr != rest.data() + rest.size())
      return fail(line_no, "the time difference must be a non-negative integer, got '" + std::string(rest) + "'");
    auto m = mapping.find(id);
    if (m == mapping.end()) return fail(line_no, "id " + std::to_string(id) + " is used before its mapping line");
    // Times stay far below the ceiling so that nanoseconds and sums cannot wrap around.
    if (diff > Profile::kMaxTotalWeight / 1000 - now) return fail(line_no, "the time passes 2^62 ns");
    now += diff;
    flush();
    if (type == "0") {
      open.emplace_back(id, m->second);
      stack.push_back(m->second);
    } else {
      // The most recent open interval of this id ends (recursion); anything opened inside it and
      // still open cannot nest properly.
      if (open.empty() || open.back().first != id)
        return fail(line_no, "end of id " + std::to_string(id) + " while " +
                                 (open.empty() ? std::string("nothing is open") : "id " + std::to_string(open.back().first) + " is innermost"));
      open.pop_back();
      stack.pop_back();
    }
  }
  if (!open.empty()) return fail(line_no, std::to_string(open.size()) + " interval(s) never end");
  out->total_seconds = static_cast<double>(out->sample_weight()) * 1e-6;
  return true;
}

}  // namespace scriptprof
