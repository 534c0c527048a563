// The sampling timer: turns elapsed *program* time into ticks, delivered in signal context.
//
// On the CPU clock, where perf events are allowed (Linux 5.18 or later, no tracer), the kernel
// sends the ticks: a perf event on the thread's task clock sends it a SIGTRAP when it has run
// to its next tick, on its way back to its own code, so that a tick in a system call goes to
// the code that made it and none cuts a sleep (direct_ticks.hpp). The handler crosses the ticks
// and times the next. No thread is added to the process and none wakes for a tick. Elsewhere
// (the wall clock; perf events refused, as for an ordinary user on Debian; a signal of the
// program's choosing; a tracer, valgrind, ThreadSanitizer; SCRIPTPROF_TASK_CLOCK=off) a watcher
// thread decides and a signal delivers, as follows; delivery() says which, and why.
//
// A watcher thread decides and a signal delivers. Why not a CPU-clock POSIX timer: on these
// machines those deliver at most ~250 signals/s (the kernel tick). Why not a timer aimed at the
// thread: it signals a thread that sleeps or blocks, which cuts its nanosleep short (EINTR
// whatever SA_RESTART says) and turns a blocked read into a storm of restarts. So one thread
// per timer sleeps to each tick's time, reads the profiled thread's clock (its CPU clock for
// `Cpu`, the monotonic clock for `Wall`), and signals the thread only while it runs: its CPU
// clock moves between two reads, or the kernel says it is runnable. A tick that falls due while
// the thread is blocked (the wall clock's) waits, and is delivered with its weight, counted as
// off-CPU, at the first check that finds the thread running again; an interruption of a sleep
// can then come only from a tick sent in the microseconds before the thread blocked. Where the
// adapter can arm a blocked thread from here (TimerSettings::on_blocked), they go to it at
// once instead, and reach the stack the thread blocked in at its first safe point.
//
// The signal is a real-time one the program does not use (SIGRTMAX-3 unless asked otherwise),
// queued to the thread with the timer's token (never SIGPROF, which programs and other
// profilers own). Any other signal of that number goes to the handler that was there before
// ours. Before each signal the watcher checks the handler is still ours: when the program
// replaced or ignored it, no signal is sent (one would kill the process or be lost) and
// handler_lost_ns() says from when.
//
// Ticks fall at random points of program time: the gaps between them are drawn uniformly in
// [period/2, 3*period/2), keeping the asked rate on average. At a fixed period, a program that
// repeats with that period (a game's frame loop) would be sampled at the same phase every
// time; with these gaps each tick's phase within such a repetition is uniform and independent
// of the last.
//
// The watcher's looks at a blocked thread are blocked_looks.hpp's, the signal and its handler
// timer_signal.hpp's. The watcher also asks the scheduler for a short slice, and leaves the
// profiled thread's CPU when it is woken late there (watcher_scheduling.hpp), so that its
// wake-ups reach that thread at once. On the CPU clock it signals a thread that blocked lately
// from that thread's CPU, where no signal can be in flight while the thread enters a sleep.
//
// Delivery on the thread instead (TimerSettings::on_thread): the watcher calls the handler
// itself and the profiled thread gets no signal at all. For an adapter whose arm() may run
// beside the running program (AngelScript's Suspend() is documented as callable from another
// thread) this removes the signal's cost from the program.
//
// Program time excludes the profiler's own work (the handler, and the adapter's sampling
// between enter_profiler/leave_profiler), so a slow stack walk cannot create the ticks that
// would keep it busy: the timer cannot livelock the program.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>
#include <sys/types.h>
#include <string>

namespace scriptprof {

class BlockedLooks;
class DirectTicks;
class ThreadObserver;
class TimerSignal;
class WatcherScheduling;

enum class TimerClock : std::uint8_t { Cpu, Wall };

// A clock's reading in nanoseconds (async-signal-safe).
std::uint64_t clock_ns(clockid_t id);

// Called in signal context, on the profiled thread (or on the watcher thread, with on_thread),
// with the whole sampling periods of program time that elapsed since the previous call, how
// many of them fell due while the thread was blocked (off-CPU: the wall clock's), and the
// program time now. Must be async-signal-safe.
using TickHandler = void (*)(void* context, std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns);

// The signal the timer uses unless told otherwise: SIGRTMAX-3, a real-time signal that queues
// and that no common library or profiler takes.
int default_timer_signal();
// Parses a signal as the option "signal" takes it: a number, "SIGRTMIN+N", "SIGRTMAX-N" or
// "SIGPROF"/"SIGUSR1"/"SIGUSR2"/"SIGALRM"/"SIGVTALRM"; 0 (with `error`) when it is none of
// those or one the process cannot catch.
int parse_timer_signal(const std::string& text, std::string* error);
// "SIGRTMAX-3", "SIGPROF": the name a message or a report gives `sig`.
std::string timer_signal_name(int sig);

struct TimerSettings {
  TimerClock clock = TimerClock::Cpu;
  std::uint64_t period_ns = 10'000'000;  // 100 Hz
  // Program time stays still from start() until leave_profiler(): the caller has its own work
  // left before the program runs, and a tick due then would land on the program's first step.
  bool start_held = false;
  // Deliver ticks from the watcher thread (no signal); the handler then runs beside the program.
  bool on_thread = false;
  // The signal delivering ticks. 0: the kernel's SIGTRAP where it sends the CPU clock's ticks,
  // else default_timer_signal(); one given here always goes through the watcher.
  int signal = 0;
  // Signal delivery: the ticks due while the thread is blocked go to this handler on the
  // watcher thread as they fall due (it arms the thread's wake-up), not to the signal handler
  // once the thread runs again, when its stack may have moved on. Null: they wait. On the polled
  // CPU clock it is also called with no tick, once a block, so that
  // the wake's first safe point calls cross_at_wake (see hand_over_blocked).
  TickHandler on_blocked = nullptr;
  // Start without ticks until set_period() gives a rate (a run a profile server drives).
  bool paused = false;
};

class SamplingTimer {
 public:
  SamplingTimer();
  SamplingTimer(const SamplingTimer&) = delete;  // the signal handler holds our address
  SamplingTimer& operator=(const SamplingTimer&) = delete;
  ~SamplingTimer();

  // Starts ticking on the calling thread. On failure returns false and says why in `error`.
  bool start(const TimerSettings& settings, TickHandler handler, void* context, std::string* error);
  // Stops ticking; no handler call is running or will run when it returns. Idempotent.
  // Returns the whole periods completed since the last tick that no signal delivered yet.
  std::uint64_t stop();
  // Of the ticks stop() returned, how many fell due while the thread was blocked (once).
  std::uint64_t take_off_cpu() { return stopped_off_cpu_.exchange(0); }
  bool running() const { return active_.load(std::memory_order_acquire); }
  // Any thread: ticks come every `period_ns` of program time from now on, the first at a
  // random point of the first period; 0 pauses them. A paused watcher waits on its condition
  // and looks at nothing: a paused run costs the program no signal and the watcher no CPU.
  // Ignored when the timer is not running (the next start() sets the rate).
  void set_period(std::uint64_t period_ns);
  // The period ticks come at now (0: paused). Any thread.
  std::uint64_t period_ns() const { return period_now_.load(std::memory_order_relaxed); }

  // Program time since start() (frozen at stop()), excluding the profiler's own time.
  std::uint64_t program_ns() const;

  // Bracket the adapter's sampling work at a safe point, on the profiled thread, so that it
  // is not program time. Not re-entrant.
  void enter_profiler();
  // Returns how long the bracketed work took, in the timer's clock.
  std::uint64_t leave_profiler();

  // The profiled thread, normal context, at its first safe point after a blocked hand-over
  // (on_blocked): crosses the ticks due by now under the watcher's lock and returns them with
  // how many were off the CPU, for the caller to charge at once. The watcher looks at a blocked
  // thread once a millisecond; a signal at its next look would bring them to whatever runs
  // by then. When the next tick is due before that look, the watcher is woken to aim at it.
  // 0 when the watcher is in a check: it crosses them then.
  std::uint64_t cross_at_wake(std::uint64_t* off_cpu);

  std::uint64_t signals() const { return signals_.load(std::memory_order_relaxed); }
  // Program time at which the signal's handler was found replaced or ignored by the program
  // (ticks stopped then); 0 while it is ours.
  std::uint64_t handler_lost_ns() const { return handler_lost_ns_.load(std::memory_order_relaxed); }
  // The signal this timer delivers with (valid once started).
  int signal_number() const { return signal_number_; }
  // How ticks reach the thread, for health(): "task clock, the kernel's SIGTRAP", "polled CPU
  // clock, queued signal (...why not the kernel's)", "polled wall clock, queued signal" or "on
  // the timer's thread".
  std::string delivery() const;

  // Signal-context entries (public for the process-wide handler only): a signal the watcher
  // queued, and one the kernel sent for the task clock (direct_ticks.hpp).
  void on_signal();
  void on_direct_signal();

 private:
  std::uint64_t now() const;
  std::uint64_t draw_gap();  // the next gap between ticks (under thread_mutex_, or stop() once the watcher is parked)
  // Crosses every tick due by program time `program`; returns how many.
  std::uint64_t cross_ticks(std::uint64_t program);
  // One check of the watcher: crosses the ticks due, delivers them or keeps them waiting, and
  // returns the delay until the next check.
  std::uint64_t check_ticks();
  void watch();  // the watcher thread
  bool hand_over_blocked(std::uint64_t program);  // to settings_.on_blocked (watcher only)
  void wake_watcher();  // stop(), set_period(): the watcher looks at its flags at once
  // Queues the signal to the profiled thread if its handler is still ours and it runs (watcher
  // only). NotSent: the handler is not ours, or the queue is full.
  enum class SendResult : std::uint8_t { Sent, Blocked, NotSent };
  SendResult send_signal();
  // Whether send_signal() signals a thread that blocks from that thread's CPU (watcher only).
  bool follows_sleepers() const;
  // Kernel-sent ticks: takes up the rate set_period() asked for since the last call (the
  // handler's, or stop()'s once no handler runs). `signalled`: set_period timed this signal
  // as the new rate's first tick.
  void take_asked_rate(std::uint64_t program, bool signalled);
  std::uint64_t stop_direct();  // stop()'s part for kernel-sent ticks
  void note_handler_lost();     // handler_lost_ns() from now, unless already said
  // A handler's own time, from `began` (monotonic) and the tick's CPU reading `raw`, taken out
  // of program time (signal context, outside enter/leave_profiler).
  void exclude_handler(std::uint64_t began, std::uint64_t raw);
  std::uint64_t program_at(std::uint64_t raw) const;
  std::uint64_t reported(std::uint64_t program) const;
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
  clockid_t clock_id_ = CLOCK_MONOTONIC;      // the clock program time is read from
  clockid_t thread_cpu_ = CLOCK_MONOTONIC;    // the profiled thread's CPU clock
  int signal_number_ = 0;                     // the signal delivering ticks
  std::uint64_t start_raw_ = 0;               // clock reading at start()
  std::uint64_t stopped_program_ns_ = 0;      // program time frozen by stop()
  std::atomic<std::uint64_t> stopped_off_cpu_{0};  // see take_off_cpu()
  std::uint64_t next_tick_ = 0;               // program time of the next tick (under thread_mutex_)
  std::uint64_t rng_ = 1;                     // xorshift64 state for the gaps (under thread_mutex_)
  bool missed_ = false;                       // the last check came before its tick (watcher only)
  bool woke_ = false;                         // cross_at_wake crossed since the last check (under thread_mutex_)
  bool wake_armed_ = false;                   // this block's wake is armed with no tick (watcher only)
  std::uint64_t last_look_ns_ = 0;            // the monotonic clock at the last check (under thread_mutex_)
  std::uint64_t next_look_ns_ = 0;            // and when the watcher looks next (under thread_mutex_)
  std::uint64_t blocked_seen_ns_ = 0;         // the monotonic clock at the last check that found it blocked (watcher only)
  std::atomic<bool> active_{false};           // handler does nothing unless set
  std::atomic<bool> in_flight_{false};        // a signal was sent and not yet handled
  std::atomic<std::uint64_t> ready_{0};       // ticks crossed, waiting for the handler
  std::atomic<std::uint64_t> ready_off_cpu_{0};  // of those, due while the thread was blocked
  std::atomic<std::uint64_t> profiler_since_{0};       // raw clock at enter_profiler, 0 outside
  std::uint64_t profiler_since_wall_ = 0;              // and the monotonic clock then (profiled thread)
  std::atomic<std::uint64_t> sent_raw_{0};             // the CPU clock when the last signal was sent
  mutable std::atomic<std::uint64_t> reported_{0};     // the latest program time reported (see reported())
  std::atomic<std::uint64_t> excluded_profiler_{0};    // time inside enter/leave_profiler
  std::atomic<std::uint64_t> excluded_handler_{0};     // time inside the signal handler
  std::atomic<std::uint64_t> signals_{0};              // signals handled
  std::atomic<std::uint64_t> handler_lost_ns_{0};      // see handler_lost_ns()
  std::thread thread_;                                 // the watcher (parked between runs)
  std::mutex thread_mutex_;                            // guards the three flags below
  std::condition_variable thread_wake_;                // a run starts or stops, or quit_
  std::condition_variable thread_parked_;              // the watcher left a run
  bool watching_ = false;                              // a run is on for the watcher
  bool quit_ = false;                                  // the timer is being destroyed
  bool paused_ = false;                                // no ticks until set_period (under thread_mutex_)
  std::atomic<std::uint64_t> period_now_{0};           // see period_ns()
  pid_t thread_tid_ = 0;                               // the profiled thread
  std::unique_ptr<TimerSignal> signal_;                // its handler's registry slot, and the sending
  std::unique_ptr<ThreadObserver> observer_;           // whether the thread runs, and where (watcher only)
  std::unique_ptr<BlockedLooks> looks_;                // the pace of the looks at a blocked thread
  std::unique_ptr<WatcherScheduling> scheduling_;      // where the watcher runs (watcher only)
  // Kernel-sent ticks (direct_ticks.hpp). While they run, next_tick_, rng_, paused_ and
  // settings_.period_ns are the handler's: set_period() asks through the two atomics below.
  std::unique_ptr<DirectTicks> direct_;
  bool kernel_sends_ = false;                          // this run's ticks are the kernel's (set by start())
  std::string why_polled_;                             // on the polled CPU clock: why not the kernel's
  std::atomic<std::uint64_t> asked_period_{0};         // the rate set_period() asked (0: paused)
  std::atomic<std::uint64_t> asked_count_{0};          // how many times it asked
  std::uint64_t asked_seen_ = 0;                       // the handler has taken up this many
  std::uint64_t excluded_at_signal_ = 0;               // the profiler's excluded time at the last signal (handler)
  std::uint64_t excluded_per_tick_ = 0;                // and how much it excluded between the last two
};

}  // namespace scriptprof
