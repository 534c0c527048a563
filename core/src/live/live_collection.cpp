#include "scriptprof/live_collection.hpp"

#include <algorithm>
#include <optional>

#include "scriptprof/frame_capture.hpp"
#include "scriptprof/profile_merge.hpp"

namespace scriptprof {

namespace {

// `from`'s samples after `into`'s (the names stay the builder's).
void append(LiveFeed::Batch& into, LiveFeed::Batch&& from) {
  const auto offset = static_cast<std::uint32_t>(into.frames.size());
  const auto sample_offset = static_cast<std::uint32_t>(into.samples.size());
  for (LiveFeed::FrameMark m : from.frames_marked) {
    m.sample += sample_offset;
    into.frames_marked.push_back(m);
  }
  if (into.frames.empty()) into.frames = std::move(from.frames);
  else into.frames.insert(into.frames.end(), from.frames.begin(), from.frames.end());
  for (LiveFeed::Sample s : from.samples) {
    s.first += offset;
    into.samples.push_back(s);
  }
  into.dropped += from.dropped;
}

}  // namespace

// A run as the collection holds it: set_period is called only under `mutex` and while the run
// is not removed, so remove_run() returning means no call of the run is made again.
struct LiveCollection::Entry {
  ServedRun run;
  std::mutex mutex;
  bool removed = false;            // under mutex
  // Under the collection's drain_mutex_:
  LiveProfileBuilder builder;
  LiveFeed::Batch window;          // the samples of the request's window so far
  std::unique_ptr<RecentWindow> recent;
  std::optional<HeapSnapshot> heap;  // the latest the run published
  void set_period(std::uint64_t period_ns) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!removed) run.set_period(period_ns);
  }
};

LiveCollection::LiveCollection(const ServeSettings& settings) : settings_(settings) {
  if (settings.continuous_hz > 0) {
    idle_period_ns_ = static_cast<std::uint64_t>(1e9 / settings.continuous_hz);
    keeps_window_ = true;
  }
}

double LiveCollection::continuous_hz() const {
  const std::uint64_t period = idle_period_ns_.load();
  return period ? 1e9 / static_cast<double>(period) : 0;
}

void LiveCollection::set_continuous(double hz) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  drain_locked();  // what came at the old rate goes in first
  idle_period_ns_ = hz > 0 ? static_cast<std::uint64_t>(1e9 / hz) : 0;
  if (hz > 0) keeps_window_ = true;
  if (!window_open_)  // a request under way keeps its rate; its end sets this one
    for (const auto& entry : snapshot()) entry->set_period(idle_period_ns_);
}

std::uint64_t LiveCollection::add_run(ServedRun run) {
  auto entry = std::make_shared<Entry>();
  entry->run = std::move(run);
  std::uint64_t id;
  {
    std::lock_guard<std::mutex> lock(runs_mutex_);
    id = next_run_++;
    runs_[id] = entry;
  }
  if (continuous()) entry->set_period(idle_period_ns_);
  return id;
}

void LiveCollection::remove_run(std::uint64_t id) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(runs_mutex_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return;
    entry = std::move(it->second);
    runs_.erase(it);
  }
  std::lock_guard<std::mutex> lock(entry->mutex);  // waits out a set_period under way
  entry->removed = true;
}

std::vector<std::shared_ptr<LiveCollection::Entry>> LiveCollection::snapshot() const {
  std::lock_guard<std::mutex> lock(runs_mutex_);
  std::vector<std::shared_ptr<Entry>> out;
  for (const auto& [id, entry] : runs_) out.push_back(entry);
  return out;
}

std::vector<ServedRun> LiveCollection::runs() const {
  std::vector<ServedRun> out;
  for (const auto& entry : snapshot()) {
    ServedRun about = entry->run;
    about.feed.reset();
    about.set_period = nullptr;
    out.push_back(std::move(about));
  }
  return out;
}

void LiveCollection::drain_locked() {
  const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
  for (const auto& entry : snapshot()) {
    LiveFeed::Batch batch = entry->run.feed->take();
    entry->builder.learn(batch);
    if (batch.heap) entry->heap = std::move(batch.heap);
    if (!entry->recent && keeps_window_)
      entry->recent = std::make_unique<RecentWindow>(settings_.window_seconds * 1'000'000'000ull, settings_.window_bytes);
    if (entry->recent) entry->recent->add(now, batch);
    if (window_open_) append(entry->window, std::move(batch));
  }
}

void LiveCollection::drain() {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  drain_locked();
}

void LiveCollection::begin_window(std::uint64_t period_ns) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  drain_locked();  // what came before the window is not the request's
  window_open_ = true;
  for (const auto& entry : snapshot()) {
    entry->window = LiveFeed::Batch{};
    entry->set_period(period_ns ? period_ns : entry->run.default_period_ns);
  }
}

void LiveCollection::close_window_locked() {
  for (const auto& entry : snapshot()) entry->set_period(idle_period_ns_);
  drain_locked();  // the window's last samples
  window_open_ = false;
}

Profile LiveCollection::end_window(TimerClock clock, double seconds) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  close_window_locked();
  return build_locked(clock, seconds, true, 0);
}

LiveCollection::Frames LiveCollection::end_window_frames(TimerClock clock, std::uint64_t budget_ns, std::size_t worst) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  close_window_locked();
  Frames out;
  out.budget_ns = budget_ns;
  for (const auto& entry : snapshot()) {
    LiveFeed::Batch window = std::move(entry->window);
    entry->window = LiveFeed::Batch{};
    if (entry->run.clock != clock) continue;
    FrameSplit split = split_frames(window, budget_ns, worst);
    out.durations_ns.insert(out.durations_ns.end(), split.durations_ns.begin(), split.durations_ns.end());
    for (CapturedFrame& f : split.kept) {
      FrameRecord r;
      r.program = entry->run.program;
      r.thread = f.thread;
      r.duration_ns = f.duration_ns;
      r.over_budget = f.over_budget;
      r.profile = entry->builder.build(f.samples, entry->run.program,
                                       clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall,
                                       static_cast<double>(f.duration_ns) / 1e9);
      if (entry->run.process_names)
        for (const auto& [id, name] : entry->run.process_names()) r.profile.add_thread(id, name);
      out.kept.push_back(std::move(r));
    }
  }
  // Over every run: the over-budget ones and the worst `worst`, longest first.
  std::stable_sort(out.kept.begin(), out.kept.end(),
                   [](const FrameRecord& a, const FrameRecord& b) { return a.duration_ns > b.duration_ns; });
  std::size_t keep = 0;
  while (keep < out.kept.size() && (keep < worst || out.kept[keep].over_budget)) ++keep;
  out.kept.resize(keep);
  return out;
}

Profile LiveCollection::recent(TimerClock clock, std::uint64_t span_ns) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  drain_locked();
  return build_locked(clock, static_cast<double>(span_ns) / 1e9, false, span_ns);
}

Profile LiveCollection::build_locked(TimerClock clock, double seconds, bool window, std::uint64_t span_ns) {
  const std::vector<std::shared_ptr<Entry>> served = snapshot();
  const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
  std::vector<Profile> parts;
  for (const auto& entry : served) {
    if (entry->run.clock != clock) continue;
    LiveFeed::Batch batch;
    if (window) batch = std::move(entry->window);
    else if (entry->recent) batch = entry->recent->collect(now, span_ns);
    entry->window = LiveFeed::Batch{};
    parts.push_back(entry->builder.build(batch, entry->run.program,
                                         clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall, seconds));
    if (entry->run.process_names)
      for (const auto& [id, name] : entry->run.process_names()) parts.back().add_thread(id, name);
  }
  // One run's profile goes whole; several merge, a process each, their JIT shares kept.
  Profile all;
  if (parts.size() == 1) all = std::move(parts.front());
  for (std::size_t i = 0; parts.size() > 1 && i < parts.size(); ++i) merge_profile(&all, parts[i]);
  all.name = served.size() == 1 ? served.front()->run.program : "scriptprof";
  all.total_seconds = seconds;  // the window, as Go's duration; the runs' time is in the samples
  return all;
}

HeapProfile LiveCollection::heap(bool allocs_first) {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  drain_locked();
  HeapProfile out;
  out.allocs_first = allocs_first;
  out.time_unix_ns = clock_ns(CLOCK_REALTIME);
  // Each run's function ids follow the ones before (one table for the profile).
  for (const auto& entry : snapshot()) {
    if (!entry->heap) continue;
    const auto offset = static_cast<FunctionId>(out.functions.size());
    for (const FunctionInfo& info : entry->builder.functions()) out.functions.add(info);
    for (const auto& thread : entry->builder.threads()) out.threads.push_back(thread);
    if (entry->run.process_names)
      for (auto& thread : entry->run.process_names()) out.threads.push_back(std::move(thread));
    for (HeapSite site : entry->heap->sites) {
      for (FunctionId& f : site.frames) f += offset;
      out.sites.push_back(std::move(site));
    }
    out.sample_bytes = entry->heap->sample_bytes;
    out.cycles += entry->heap->cycles;
  }
  return out;
}

void LiveCollection::pause_all() {
  for (const auto& entry : snapshot()) entry->set_period(0);
}

}  // namespace scriptprof
