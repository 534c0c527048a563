#include "scriptprof/frame_capture.hpp"

#include <algorithm>
#include <map>

namespace scriptprof {

FrameSplit split_frames(const LiveFeed::Batch& window, std::uint64_t budget_ns, std::size_t worst, std::size_t most) {
  FrameSplit out;
  // Each thread's marks in order; a frame is its samples between two of them.
  std::map<std::uint32_t, std::vector<const LiveFeed::FrameMark*>> marks;
  for (const LiveFeed::FrameMark& m : window.frames_marked) marks[m.thread].push_back(&m);
  struct Whole {
    std::uint32_t thread;
    std::uint32_t from, to;  // sample indexes [from, to)
    std::uint64_t duration, ended;
  };
  std::vector<Whole> frames;
  for (const auto& [thread, list] : marks)
    for (std::size_t i = 1; i < list.size(); ++i) {
      const std::uint64_t d = list[i]->mono_ns > list[i - 1]->mono_ns ? list[i]->mono_ns - list[i - 1]->mono_ns : 0;
      frames.push_back({thread, list[i - 1]->sample, list[i]->sample, d, list[i]->mono_ns});
      out.durations_ns.push_back(d);
    }
  // Longest first: the over-budget ones and the worst, at most `most`.
  std::vector<std::size_t> order(frames.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return frames[a].duration > frames[b].duration; });
  for (std::size_t rank = 0; rank < order.size() && out.kept.size() < most; ++rank) {
    const Whole& w = frames[order[rank]];
    const bool over = budget_ns > 0 && w.duration > budget_ns;
    if (!over && rank >= worst) break;  // sorted: no later one is over budget either
    CapturedFrame f;
    f.thread = w.thread;
    f.duration_ns = w.duration;
    f.ended_ns = w.ended;
    f.over_budget = over;
    for (std::uint32_t i = w.from; i < w.to && i < window.samples.size(); ++i) {
      LiveFeed::Sample s = window.samples[i];
      if (s.thread != w.thread) continue;
      const auto first = static_cast<std::uint32_t>(f.samples.frames.size());
      f.samples.frames.insert(f.samples.frames.end(), window.frames.begin() + s.first,
                              window.frames.begin() + s.first + s.count);
      s.first = first;
      f.samples.samples.push_back(s);
    }
    out.kept.push_back(std::move(f));
  }
  return out;
}

}  // namespace scriptprof
