// The sampling timer: turns elapsed *program* time into ticks, delivered in signal context.
//
// Why not a CPU-clock POSIX timer: on these machines those deliver at most ~250 signals/s
// (the kernel tick). Instead a CLOCK_MONOTONIC timer aimed at the profiled thread
// (SIGEV_THREAD_ID) fires at the requested rate, and the handler reads the chosen clock:
// the thread's CPU clock for `Cpu` (no ticks while the thread sleeps), the monotonic clock
// for `Wall`. Ticks that coalesce are carried as a count, never lost.
//
// Ticks fall at random points of program time: the gaps between them are drawn uniformly in
// [period/2, 3*period/2), keeping the asked rate on average. At a fixed period, a program that
// repeats with that period (a game's frame loop) would be sampled at the same phase every
// time; with these gaps each tick's phase within such a repetition is uniform and independent
// of the last. The timer is one-shot, re-armed by the handler for the next tick's time.
//
// Delivery on a thread instead (TimerSettings::on_thread): a timer thread sleeps to each tick,
// reads the profiled thread's clock and calls the handler itself, so the profiled thread gets
// no signal at all. For an adapter whose arm() may run beside the running program (AngelScript's
// Suspend() is documented as callable from another thread) this removes the signal's cost from
// the program, which on a virtual machine is most of a sample's cost (about 20 us a signal).
//
// Program time excludes the profiler's own work (the handler, and the adapter's sampling
// between enter_profiler/leave_profiler), so a slow stack walk cannot create the ticks that
// would keep it busy: the timer cannot livelock the program.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <thread>
#include <sys/types.h>
#include <string>

namespace scriptprof {

enum class TimerClock : std::uint8_t { Cpu, Wall };

// A clock's reading in nanoseconds (async-signal-safe).
std::uint64_t clock_ns(clockid_t id);

// Called in signal context, on the profiled thread (or on the timer thread, with on_thread),
// with the whole sampling periods of program time that elapsed since the previous call, and the
// program time now. Must be async-signal-safe.
using TickHandler = void (*)(void* context, std::uint64_t ticks, std::uint64_t program_ns);

struct TimerSettings {
  TimerClock clock = TimerClock::Cpu;
  std::uint64_t period_ns = 10'000'000;  // 100 Hz
  // Program time stays still from start() until leave_profiler(): the caller has its own work
  // left before the program runs, and a tick due then would land on the program's first step.
  bool start_held = false;
  // Deliver ticks from a timer thread (no signal); the handler then runs beside the program.
  bool on_thread = false;
};

class SamplingTimer {
 public:
  SamplingTimer() = default;
  SamplingTimer(const SamplingTimer&) = delete;  // the signal handler holds our address
  SamplingTimer& operator=(const SamplingTimer&) = delete;
  ~SamplingTimer() { stop(); }

  // Starts ticking on the calling thread. On failure returns false and says why in `error`.
  bool start(const TimerSettings& settings, TickHandler handler, void* context, std::string* error);
  // Stops ticking; no handler call is running or will run when it returns. Idempotent.
  // Returns the whole periods completed since the last tick that no signal delivered yet.
  std::uint64_t stop();
  bool running() const { return active_.load(std::memory_order_acquire); }

  // Program time since start() (frozen at stop()), excluding the profiler's own time.
  std::uint64_t program_ns() const;

  // Bracket the adapter's sampling work at a safe point, on the profiled thread, so that it
  // is not program time. Not re-entrant.
  void enter_profiler();
  // Returns how long the bracketed work took, in the timer's clock.
  std::uint64_t leave_profiler();

  std::uint64_t signals() const { return signals_.load(std::memory_order_relaxed); }

  // Signal-context entry (public for the process-wide handler only).
  void on_signal();

 private:
  std::uint64_t now() const;
  std::uint64_t draw_gap();  // the next gap between ticks (handler, or stop() once it is quiet)
  // Crosses every tick due by program time `program`; returns how many.
  std::uint64_t cross_ticks(std::uint64_t program);
  void rearm(std::uint64_t delay_ns);
  // One tick check at the clock's reading now (signal or timer thread): calls the handler for
  // the ticks due and returns the delay until the next check.
  std::uint64_t check_ticks();
  void thread_loop();  // the timer thread (on_thread)
  bool on_profiled_thread() const;
  std::uint64_t program_at(std::uint64_t raw) const;
  // Runs `step` (a clock read and what follows from it) until no signal handler excluded its
  // own time meanwhile: such a handler subtracts time a read taken before it did not contain,
  // and program time would step back by it. Profiled thread only; returns step's result.
  template <typename Step>
  auto clear_of_handlers(Step step) const {
    for (;;) {
      const std::uint64_t handled = excluded_handler_.load(std::memory_order_relaxed);
      auto result = step();
      if (excluded_handler_.load(std::memory_order_relaxed) == handled) return result;
    }
  }

  TimerSettings settings_;
  TickHandler handler_ = nullptr;
  void* context_ = nullptr;
  clockid_t clock_id_ = CLOCK_MONOTONIC;     // the clock program time is read from
  timer_t timer_id_{};                        // the POSIX timer delivering the signal
  std::uint64_t start_raw_ = 0;               // clock reading at start()
  std::uint64_t stopped_program_ns_ = 0;      // program time frozen by stop()
  std::uint64_t next_tick_ = 0;               // program time of the next tick (handler only)
  std::uint64_t rng_ = 1;                     // xorshift64 state for the gaps (handler only)
  bool missed_ = false;                       // the last signal came before its tick (handler only)
  std::uint64_t excluded_at_signal_ = 0;      // exclusions seen by the last signal (handler only)
  std::atomic<bool> active_{false};           // handler does nothing unless set
  std::atomic<std::uint64_t> profiler_since_{0};       // raw clock at enter_profiler, 0 outside
  std::atomic<std::uint64_t> excluded_profiler_{0};    // time inside enter/leave_profiler
  std::atomic<std::uint64_t> excluded_handler_{0};     // time inside the signal handler
  std::atomic<std::uint64_t> signals_{0};              // signals handled
  int slot_ = -1;                                      // index in the handler's registry
  std::thread thread_;                                 // on_thread: the timer thread
  std::mutex thread_mutex_;                            // on_thread: wakes it at stop()
  std::condition_variable thread_wake_;
  pid_t thread_tid_ = 0;                               // the profiled thread
};

}  // namespace scriptprof
