#include "zone_log.hpp"

#include <algorithm>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>

#include "scriptprof/interval_formats.hpp"
#include "scriptprof/sampling_timer.hpp"

namespace scriptprof::native {

namespace {

// One thread's events. The lock is only contended while the log is read.
struct ThreadBuffer {
  std::mutex mutex;
  std::uint64_t generation = 0;  // the log this buffer's events belong to
  std::vector<ZoneEvent> events;
};

std::atomic<bool> g_on{false};
std::atomic<std::uint64_t> g_generation{0};
std::mutex g_buffers_mutex;
std::vector<std::shared_ptr<ThreadBuffer>> g_buffers;  // outlive their threads until read

ThreadBuffer& thread_buffer() {
  // The buffer is shared with the registry, so events of a thread that has ended are kept.
  thread_local std::shared_ptr<ThreadBuffer> buffer = [] {
    auto b = std::make_shared<ThreadBuffer>();
    std::lock_guard<std::mutex> lock(g_buffers_mutex);
    g_buffers.push_back(b);
    return b;
  }();
  return *buffer;
}

std::uint64_t g_start_ns = 0;  // written before g_on is set

}  // namespace

void start_zone_log() {
  std::lock_guard<std::mutex> lock(g_buffers_mutex);
  g_on.store(false);
  g_generation.fetch_add(1);
  for (auto& b : g_buffers) {
    std::lock_guard<std::mutex> buffer_lock(b->mutex);
    b->events.clear();
  }
  g_start_ns = clock_ns(CLOCK_MONOTONIC);
  g_on.store(true, std::memory_order_release);
}

void stop_zone_log() { g_on.store(false, std::memory_order_release); }

bool zone_log_on() { return g_on.load(std::memory_order_relaxed); }

void log_zone_event(bool begin, std::uint32_t process, ZoneId zone) {
  ThreadBuffer& b = thread_buffer();
  std::uint64_t t = clock_ns(CLOCK_MONOTONIC);
  std::lock_guard<std::mutex> lock(b.mutex);
  std::uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (b.generation != generation) {  // the first event of a new log on this thread
    b.events.clear();
    b.generation = generation;
  }
  b.events.push_back({begin, process, zone, t});
}

std::vector<ZoneEvent> zone_log_events() {
  std::vector<ZoneEvent> all;
  std::lock_guard<std::mutex> lock(g_buffers_mutex);
  std::uint64_t generation = g_generation.load();
  for (auto& b : g_buffers) {
    std::lock_guard<std::mutex> buffer_lock(b->mutex);
    if (b->generation != generation) continue;
    for (ZoneEvent e : b->events) {
      e.t_ns = e.t_ns >= g_start_ns ? e.t_ns - g_start_ns : 0;
      all.push_back(e);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const ZoneEvent& a, const ZoneEvent& b) { return a.t_ns < b.t_ns; });
  return all;
}

std::string zone_log_lms_csv(const std::vector<ZoneEvent>& events,
                             const std::vector<std::pair<std::uint32_t, std::string>>& process_names) {
  std::map<std::uint32_t, std::string> process_name(process_names.begin(), process_names.end());
  bool several = false;
  for (const ZoneEvent& e : events) several |= e.process != events.front().process;
  // Ids per (process, zone): zones of fibers sharing a thread overlap without nesting, and
  // lms matches an end only with a begin of the same id.
  std::map<std::pair<std::uint32_t, ZoneId>, std::uint32_t> ids;
  std::vector<std::string> names;
  std::vector<LmsEvent> out;
  out.reserve(events.size());
  // Zones open per process: an end of a zone opened before the log started is left out, and
  // zones still open at the end are closed there, so every begin has its end.
  std::map<std::uint32_t, std::vector<std::uint32_t>> open;
  for (const ZoneEvent& e : events) {
    std::vector<std::uint32_t>& stack = open[e.process];
    auto known = ids.find({e.process, e.zone});
    if (!e.begin && (stack.empty() || known == ids.end() || stack.back() != known->second)) continue;
    auto [it, fresh] = ids.emplace(std::make_pair(e.process, e.zone), static_cast<std::uint32_t>(names.size()));
    if (fresh) {
      std::string name = zone_name(e.zone);
      if (several) {
        auto p = process_name.find(e.process);
        name = (p != process_name.end() ? p->second : "process " + std::to_string(e.process)) + ": " + name;
      }
      names.push_back(std::move(name));
    }
    out.push_back({e.begin, it->second, e.t_ns});
    if (e.begin)
      stack.push_back(it->second);
    else
      stack.pop_back();
  }
  std::uint64_t last = events.empty() ? 0 : events.back().t_ns;
  for (auto& [process, stack] : open)
    for (auto id = stack.rbegin(); id != stack.rend(); ++id) out.push_back({false, *id, last});
  return write_lms_events(names, out, true);
}

}  // namespace scriptprof::native
