// What a profile server collects, apart from HTTP: the runs it serves, their rates, and the
// profiles of their samples over a request's window or (continuous mode) over the recent
// window. Every call from any thread; one reader (this) drains every run's feed.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "scriptprof/live_feed.hpp"
#include "scriptprof/live_profile.hpp"
#include "scriptprof/profile.hpp"
#include "scriptprof/recent_window.hpp"
#include "scriptprof/sampling_timer.hpp"

namespace scriptprof {

// One run served, and how to drive it from another thread.
struct ServedRun {
  std::string program;              // the script or host, for the index and the profiles' name
  std::string runtime;              // "Lua 5.4", for the index
  std::string note;                 // a line the index adds (LuaJIT: one VM per process)
  TimerClock clock = TimerClock::Cpu;
  std::uint64_t default_period_ns = 10'000'000;  // a request without hz: 100 Hz, as Go's
  std::shared_ptr<LiveFeed> feed;
  std::function<void(std::uint64_t period_ns)> set_period;  // any thread; 0 pauses the ticks
  // Names of processes the run learnt outside its feed (a C host's threads and fibers), asked
  // when a profile is built (any thread). Optional.
  std::function<std::vector<std::pair<std::uint32_t, std::string>>()> process_names;
  // Its mean bytes between sampled blocks when it publishes its in-use heap after each GC
  // cycle; 0: it keeps no heap.
  std::uint64_t heap_sample_bytes = 0;
};

// How a server collects between requests.
struct ServeSettings {
  // Continuous mode: between requests every run samples at this rate (19 Hz by convention:
  // a prime, so no periodic work of the program aliases with it; the gaps are random anyway),
  // and the last `window_seconds` are kept for /debug/scriptprof/recent. 0: off, no tick.
  double continuous_hz = 0;
  std::uint64_t window_seconds = 600;
  std::size_t window_bytes = std::size_t{16} << 20;  // per run
};

class LiveCollection {
 public:
  explicit LiveCollection(const ServeSettings& settings = {});
  const ServeSettings& settings() const { return settings_; }
  // Continuous sampling is on now (a rate between requests).
  bool continuous() const { return idle_period_ns_.load() > 0; }
  // The rate between requests now, in Hz (0: paused).
  double continuous_hz() const;
  // A recent window is kept (continuous mode was on at some point): /recent has something.
  bool keeps_window() const { return keeps_window_.load(); }
  // Sets the rate between requests (0 stops it; the window kept so far stays until it ages).
  void set_continuous(double hz);

  // Serves `run` from now on (at the continuous rate, if on); returns its id for remove_run.
  std::uint64_t add_run(ServedRun run);
  // When it returns, nothing of the run is called again.
  void remove_run(std::uint64_t id);
  // The runs' descriptions (set_period and feed left out), in the order they were added.
  std::vector<ServedRun> runs() const;

  // A request's window: every run at `period_ns` (0: each run's default) from now on ...
  void begin_window(std::uint64_t period_ns);
  // ... until now: the runs go back to their idle rate, and the window's samples are one
  // profile on `clock` (runs on another clock left out), `seconds` long.
  Profile end_window(TimerClock clock, double seconds);
  // ... or until now cut into frames at the runs' marks (profiler.frame()): every frame over
  // `budget_ns` and the `worst` longest, each its own profile, and every frame's duration.
  struct FrameRecord {
    std::string program;
    std::uint32_t thread = 0;
    std::uint64_t duration_ns = 0;
    bool over_budget = false;
    Profile profile;
  };
  struct Frames {
    std::vector<std::uint64_t> durations_ns;
    std::vector<FrameRecord> kept;  // longest first
    std::uint64_t budget_ns = 0;
  };
  Frames end_window_frames(TimerClock clock, std::uint64_t budget_ns, std::size_t worst);
  // Continuous mode: the samples of the last `span_ns` (whole seconds) of every run.
  Profile recent(TimerClock clock, std::uint64_t span_ns);
  // The in-use heap and the allocations of every run that tracks it, as of each one's last
  // completed GC cycle (allocs_first: for /allocs). `cycles` 0: none completed yet.
  HeapProfile heap(bool allocs_first);
  // Takes every run's new samples (the collector's tick, twice a second).
  void drain();
  // Every run paused (the server stops).
  void pause_all();

 private:
  struct Entry;
  void drain_locked();  // under drain_mutex_
  void close_window_locked();  // the runs back to their idle rate, the window's last samples in
  Profile build_locked(TimerClock clock, double seconds, bool window, std::uint64_t span_ns);

  ServeSettings settings_;
  std::atomic<std::uint64_t> idle_period_ns_{0};  // between requests
  std::atomic<bool> keeps_window_{false};
  mutable std::mutex runs_mutex_;
  std::map<std::uint64_t, std::shared_ptr<Entry>> runs_;  // under runs_mutex_
  std::uint64_t next_run_ = 1;                            // under runs_mutex_
  std::mutex drain_mutex_;  // the feeds' one reader; the window and builders are under it
  bool window_open_ = false;  // under drain_mutex_
  std::vector<std::shared_ptr<Entry>> snapshot() const;
};

}  // namespace scriptprof
