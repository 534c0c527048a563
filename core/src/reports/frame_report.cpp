#include "scriptprof/frame_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include "text_util.hpp"

namespace scriptprof {

namespace {

std::string ms(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e6);
  return buf;
}

// The functions on top of the stack in the samples of one frame, heaviest first.
std::string top_functions(const Profile& p, const FrameSpan& f, std::size_t n) {
  // The frame's thread and the fibers that ran on it share its clock.
  std::vector<std::uint32_t> threads{f.thread};
  for (const ThreadInfo& t : p.threads)
    if (t.os_thread == f.thread) threads.push_back(t.id);
  std::map<FunctionId, std::uint64_t> self;
  for (const SampleRecord& s : p.samples) {
    if (std::find(threads.begin(), threads.end(), s.thread) == threads.end()) continue;
    if (s.t_ns < f.begin_ns || s.t_ns >= f.end_ns) continue;
    FunctionId leaf = p.tree.node(s.leaf).function;
    if (leaf != kNoFunction) self[leaf] += s.weight;
  }
  std::vector<std::pair<FunctionId, std::uint64_t>> order(self.begin(), self.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (std::size_t i = 0; i < order.size() && i < n; ++i)
    out += (i ? ", " : "") + p.functions.label(order[i].first) + " " + std::to_string(order[i].second);
  return out.empty() ? "-" : out;
}

}  // namespace

std::vector<FrameSpan> frame_spans(const Profile& p) {
  std::map<std::uint32_t, std::vector<std::uint64_t>> marks;
  for (const FrameMark& m : p.frame_marks) marks[m.thread].push_back(m.t_ns);
  std::vector<FrameSpan> spans;
  // A mark ends a frame: the first frame began with the profile (its time 0), so N marks are
  // N frames.
  for (auto& [thread, times] : marks) {
    std::sort(times.begin(), times.end());
    for (std::size_t i = 0; i < times.size(); ++i) spans.push_back({thread, i + 1, i ? times[i - 1] : 0, times[i]});
  }
  return spans;
}

std::string frame_report(const Profile& p, std::size_t slowest) {
  std::vector<FrameSpan> spans = frame_spans(p);
  if (spans.empty()) return "No frames marked (call profiler.frame() or scriptprof_frame() once per frame).\n";
  const char* clock = p.clock == ClockKind::Wall ? "wall" : "cpu";
  std::string out;
  std::size_t begin = 0;
  while (begin < spans.size()) {
    std::size_t end = begin;
    std::uint64_t total = 0, longest = 0;
    while (end < spans.size() && spans[end].thread == spans[begin].thread) {
      std::uint64_t len = spans[end].end_ns - spans[end].begin_ns;
      total += len;
      longest = std::max(longest, len);
      ++end;
    }
    std::size_t count = end - begin;
    std::uint32_t thread = spans[begin].thread;
    out += "Frames of " + thread_label_of(p, thread) + ": " +
           std::to_string(count) + " frames, average " + ms(total / count) + " ms, longest " + ms(longest) +
           " ms (" + clock + " time)\n";
    std::vector<FrameSpan> order(spans.begin() + static_cast<std::ptrdiff_t>(begin),
                                 spans.begin() + static_cast<std::ptrdiff_t>(end));
    std::stable_sort(order.begin(), order.end(), [](const FrameSpan& a, const FrameSpan& b) {
      return a.end_ns - a.begin_ns > b.end_ns - b.begin_ns;
    });
    if (order.size() > slowest) order.resize(slowest);
    if (!order.empty()) out += "  slowest   frame    start ms   length ms   top of stack (samples)\n";
    for (std::size_t i = 0; i < order.size(); ++i) {
      char row[96];
      std::snprintf(row, sizeof row, "  %7zu %7zu %11s %11s   ", i + 1, order[i].index, ms(order[i].begin_ns).c_str(),
                    ms(order[i].end_ns - order[i].begin_ns).c_str());
      out += row + (p.keep_samples ? top_functions(p, order[i], 3) : std::string("(full stacks not kept)")) + "\n";
    }
    begin = end;
  }
  return visible_text(out);
}

}  // namespace scriptprof
