#include <charconv>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "scriptprof/interval_formats.hpp"
#include "scriptprof/timeline.hpp"

#include "text_util.hpp"
#include "time_scale.hpp"

namespace scriptprof {

namespace {

struct LmsLine {
  int type;               // 0 begin, 1 end, 2 mapping
  std::uint64_t id;
  std::uint64_t diff;     // types 0 and 1
  std::string_view text;  // type 2
};

// One non-empty line; `what` says what is wrong with it.
bool parse_lms_line(std::string_view line, LmsLine* out, std::string* what) {
  std::size_t c1 = line.find(','), c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
  if (c2 == std::string_view::npos) return *what = "expected \"type,id,value\"", false;
  std::string_view type = line.substr(0, c1), id = line.substr(c1 + 1, c2 - c1 - 1), rest = line.substr(c2 + 1);
  if (!parse_u64(id, &out->id))
    return *what = "the id must be a non-negative integer, got '" + std::string(id) + "'", false;
  if (type == "2") {
    out->type = 2;
    out->text = rest;
    return true;
  }
  if (type != "0" && type != "1")
    return *what = "the type must be 0, 1 or 2, got '" + std::string(type) + "'", false;
  out->type = type == "0" ? 0 : 1;
  if (!parse_u64(rest, &out->diff))
    return *what = "the time difference must be a non-negative integer, got '" + std::string(rest) + "'", false;
  return true;
}

}  // namespace

bool write_lms_csv(const Profile& p, std::string* out, std::string* error) {
  if (!p.keep_samples) {
    if (error) *error = no_timeline_message("lms CSV needs");
    return false;
  }
  std::vector<std::uint32_t> threads = sampled_threads(p);
  out->clear();
  if (threads.empty()) return true;
  std::unordered_map<FunctionId, std::uint32_t> ids;
  std::vector<std::string> names;
  std::vector<LmsEvent> events;
  for (const TimelineEvent& e : thread_timeline(p, threads.front())) {
    auto [it, fresh] = ids.emplace(e.function, static_cast<std::uint32_t>(names.size()));
    if (fresh) names.push_back(p.functions.label(e.function));
    events.push_back({e.open, it->second, e.t_ns});
  }
  *out = write_lms_events(names, events, false);
  return true;
}

std::string write_lms_events(const std::vector<std::string>& names, const std::vector<LmsEvent>& events,
                             bool mapping_first) {
  std::string out;
  std::vector<bool> mapped(names.size(), false);
  auto map = [&](std::uint32_t id) {
    if (mapped[id]) return;
    mapped[id] = true;
    std::string name = names[id];
    for (char& c : name)
      if (c == '\n' || c == '\r') c = ' ';
    out += "2," + std::to_string(id) + "," + name + "\n";
  };
  if (mapping_first)
    for (const LmsEvent& e : events) map(e.id);
  std::uint64_t last_us = 0;
  for (const LmsEvent& e : events) {
    map(e.id);
    // Round the absolute time first, then take differences: rounding never drifts.
    std::uint64_t us = (e.t_ns + 500) / 1000;
    out += std::string(e.begin ? "0," : "1,") + std::to_string(e.id) + "," + std::to_string(us - last_us) + "\n";
    last_us = us;
  }
  return out;
}

namespace {

// The reading both readers share: lines in order, `mapping(id, text)` for each mapping line and
// `event(begin, id, now_us)` for each begin or end, once its id is known to be mapped and its
// absolute time to fit. A non-empty answer from `event` is that line's error; `still_open()`
// at the end counts intervals that never ended. Errors carry the line number.
template <class Mapping, class Event, class StillOpen>
bool read_lms_lines(std::string_view text, std::string* error, Mapping&& mapping, Event&& event,
                    StillOpen&& still_open) {
  auto fail = [&](std::size_t line, const std::string& what) {
    if (error) *error = "line " + std::to_string(line) + ": " + what;
    return false;
  };
  std::unordered_set<std::uint64_t> mapped;
  std::uint64_t now = 0;
  std::size_t line_no = 0, pos = 0;
  std::string_view line;
  while (next_line(text, &pos, &line)) {
    ++line_no;
    if (line.empty()) continue;
    LmsLine l;
    std::string what;
    if (!parse_lms_line(line, &l, &what)) return fail(line_no, what);
    if (l.type == 2) {
      mapped.insert(l.id);
      mapping(l.id, l.text);  // the last binding wins
      continue;
    }
    if (!mapped.count(l.id)) return fail(line_no, "id " + std::to_string(l.id) + " is used before its mapping line");
    // Times stay far below the ceiling so that nanoseconds and sums cannot wrap around.
    if (l.diff > Profile::kMaxTotalWeight / 1000 - now) return fail(line_no, "the time passes 2^62 ns");
    now += l.diff;
    what = event(l.type == 0, l.id, now);
    if (!what.empty()) return fail(line_no, what);
  }
  if (std::size_t open = still_open()) return fail(line_no, std::to_string(open) + " interval(s) never end");
  return true;
}

}  // namespace

bool read_lms_csv(std::string_view text, Profile* out, std::string* error) {
  *out = Profile{};
  out->clock = ClockKind::Wall;
  out->period_ns = 1000;  // weights are microseconds
  out->keep_samples = true;
  std::unordered_map<std::uint64_t, FunctionId> mapping;
  std::vector<std::pair<std::uint64_t, FunctionId>> open;  // (lms id, function), innermost last
  std::vector<FunctionId> stack;
  std::uint64_t stretch_start = 0;
  bool ok = read_lms_lines(
      text, error,
      [&](std::uint64_t id, std::string_view name) {
        FunctionInfo info;
        info.name = std::string(name);
        info.kind = FunctionKind::Named;
        mapping[id] = out->add_function(std::move(info));
      },
      [&](bool begin, std::uint64_t id, std::uint64_t now) -> std::string {
        // The stretch since the last event, with the stack it had.
        if (now > stretch_start && !stack.empty())
          out->add_sample(0, stretch_start * 1000, now - stretch_start, stack.data(), stack.size());
        stretch_start = now;
        if (begin) {
          open.emplace_back(id, mapping[id]);
          stack.push_back(mapping[id]);
          return {};
        }
        // The most recent open interval of this id ends (recursion); anything opened inside it
        // and still open cannot nest properly.
        if (open.empty() || open.back().first != id)
          return "end of id " + std::to_string(id) + " while " +
                 (open.empty() ? std::string("nothing is open") : "id " + std::to_string(open.back().first) + " is innermost");
        open.pop_back();
        stack.pop_back();
        return {};
      },
      [&] { return open.size(); });
  if (!ok) return false;
  out->total_seconds = static_cast<double>(out->sample_weight()) * 1e-6;
  return true;
}

bool read_lms_intervals(std::string_view text, std::vector<LmsInterval>* out, std::string* error) {
  out->clear();
  std::unordered_map<std::uint64_t, std::string> names;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> open;  // per id, begin times (LIFO)
  std::size_t still_open = 0;
  return read_lms_lines(
      text, error, [&](std::uint64_t id, std::string_view name) { names[id] = std::string(name); },
      [&](bool begin, std::uint64_t id, std::uint64_t now) -> std::string {
        std::vector<std::uint64_t>& begins = open[id];
        if (begin) {
          begins.push_back(now);
          ++still_open;
          return {};
        }
        if (begins.empty()) return "end of id " + std::to_string(id) + " that is not open";
        out->push_back({names[id], begins.back(), now});
        begins.pop_back();
        --still_open;
        return {};
      },
      [&] { return still_open; });
}

}  // namespace scriptprof
