#include "scriptprof/sampling_timer.hpp"

#include "blocked_looks.hpp"
#include "direct_ticks.hpp"
#include "thread_observer.hpp"
#include "timer_signal.hpp"
#include "watcher_scheduling.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <system_error>

namespace scriptprof {

std::uint64_t clock_ns(clockid_t id) {
  struct timespec ts = {0, 0};  // stays 0 for the clock of a thread that has exited
  clock_gettime(id, &ts);  // async-signal-safe (POSIX)
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// ---- Timer -----------------------------------------------------------------------------------

std::uint64_t SamplingTimer::now() const { return clock_ns(clock_id_); }

namespace {
// The profiled thread's own short stretches (the handler, a sample) are timed on the monotonic
// clock, a vDSO read, where a read of the thread's CPU clock is a system call that takes its run
// queue's lock (~0.5 us here; three of them a sample at 10 kHz cost more than a point). A
// stretch this short ran on the CPU but for a rare preemption inside it, which it counts as
// the profiler's time (program time then stalls by as much, under 25 us: see reported()); a
// longer one (a deep walk, a sanitizer's build, a preemption) is read on the CPU clock.
constexpr std::uint64_t kShortStretchNs = 25'000;

std::uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

// A thread found blocked within this long is one that blocks (a frame loop's sleep each frame).
constexpr std::uint64_t kBlockedLatelyNs = 100'000'000;
// The shortest period at which the watcher signals from the thread's CPU. There its wake-ups
// wait behind the thread at times, 100-200 us: at 10 kHz, LuaJIT's frame loop on the polled CPU
// clock read -1.2 and -2.8 points (-0.1 and -0.5 from another CPU), though no sleep of 2000 was
// cut (9-21 in 1000 from another CPU). At 1 kHz no split moved.
constexpr std::uint64_t kFollowMinPeriodNs = 500'000;
// Kernel-sent ticks: a tick due within the kernel's shortest period (10 us) is taken now.
constexpr std::uint64_t kDirectSlackNs = 10'000;
}  // namespace

std::uint64_t SamplingTimer::program_at(std::uint64_t raw) const {
  std::uint64_t excluded = excluded_profiler_.load(std::memory_order_relaxed) +
                           excluded_handler_.load(std::memory_order_relaxed);
  std::uint64_t elapsed = raw > start_raw_ ? raw - start_raw_ : 0;
  return elapsed > excluded ? elapsed - excluded : 0;
}

// What program_ns() and the handler report: never below a reading reported before. (A
// preemption inside a short stretch of our own work is excluded with it, kShortStretchNs, and
// would make a later reading lower by as much.) A lock-free maximum: any thread, signal context.
std::uint64_t SamplingTimer::reported(std::uint64_t program) const {
  std::uint64_t seen = reported_.load(std::memory_order_relaxed);
  while (program > seen && !reported_.compare_exchange_weak(seen, program, std::memory_order_relaxed)) {}
  return std::max(program, seen);
}

bool SamplingTimer::start(const TimerSettings& settings, TickHandler handler, void* context,
                          std::string* error) {
  if (running()) {
    if (error) *error = "timer already running";
    return false;
  }
  if (settings.period_ns == 0) {
    if (error) *error = "sampling period must be positive";
    return false;
  }
  settings_ = settings;
  handler_ = handler;
  context_ = context;
  signal_number_ = settings.signal ? settings.signal : default_timer_signal();
  if (!settings.on_thread && !parse_timer_signal(timer_signal_name(signal_number_), error)) return false;
  thread_tid_ = gettid();
  // The kernel sends the CPU clock's ticks where it can (direct_ticks.hpp), unless the program
  // asked for a signal of its own choosing: its SIGTRAP carries them.
  std::string why_not;
  kernel_sends_ = !settings.on_thread && settings.clock == TimerClock::Cpu && !settings.signal &&
                  DirectTicks::usable(thread_tid_, &why_not);
  if (kernel_sends_) signal_number_ = SIGTRAP;
  // This thread's CPU clock, readable from the watcher (and from stop(), which may run elsewhere).
  if (int rc = pthread_getcpuclockid(pthread_self(), &thread_cpu_); rc != 0) {
    if (error) *error = std::string("pthread_getcpuclockid: ") + std::strerror(rc);
    return false;
  }
  clock_id_ = settings.clock == TimerClock::Cpu ? thread_cpu_ : CLOCK_MONOTONIC;
  if (!settings.on_thread) {
    // Our ticks are queued signals: with no room for one, none would ever arrive.
    rlimit pending{};
    if (getrlimit(RLIMIT_SIGPENDING, &pending) == 0 && pending.rlim_cur == 0) {
      if (error) *error = "the system allows this process no queued signal (RLIMIT_SIGPENDING is 0): the timer cannot deliver ticks";
      return false;
    }
    if (!signal_->claim(signal_number_, this, error)) return false;  // start() runs on the sampled thread
    if (kernel_sends_ && !direct_->open(thread_tid_, signal_->token(), &why_not)) {
      // Usable a moment ago (a limit on open files reached since?): the watcher then.
      kernel_sends_ = false;
      signal_number_ = default_timer_signal();
      if (!signal_->claim(signal_number_, this, error)) return false;
    }
    if (!kernel_sends_) {
      observer_->open(thread_tid_, thread_cpu_);
      looks_->begin();  // the watcher is parked
      why_polled_ = settings.clock == TimerClock::Cpu ? why_not : std::string();
    }
  }
  excluded_profiler_ = 0;
  excluded_handler_ = 0;
  signals_ = 0;
  ready_ = 0;
  ready_off_cpu_ = 0;
  last_look_ns_ = monotonic_ns();
  blocked_seen_ns_ = 0;
  in_flight_ = false;
  handler_lost_ns_ = 0;
  start_raw_ = now();
  sent_raw_ = start_raw_;
  reported_ = 0;
  profiler_since_ = settings.start_held ? start_raw_ : 0;
  profiler_since_wall_ = monotonic_ns();
  // The first tick falls at a uniformly random point of the first period, not at its end: then
  // a run of T seconds expects exactly T/period ticks, where a fixed phase always drops the
  // last part period (10% of a 50 ms run at 100 Hz).
  std::minstd_rand phase_rng(static_cast<std::uint32_t>(start_raw_ ^ (start_raw_ >> 32) ^
                                                          static_cast<std::uint64_t>(thread_tid_)));
  next_tick_ = 1 + std::uniform_int_distribution<std::uint64_t>(0, settings.period_ns - 1)(phase_rng);
  rng_ = phase_rng() | 1u;  // any non-zero state
  missed_ = false;
  woke_ = false;
  wake_armed_ = false;
  if (kernel_sends_) {
    // No thread: the kernel signals the first tick. (A held start makes it early: the handler
    // then finds no tick due and sets the signal after.)
    paused_ = settings.paused;
    asked_period_.store(paused_ ? 0 : settings.period_ns, std::memory_order_relaxed);
    asked_count_.store(0, std::memory_order_relaxed);
    asked_seen_ = 0;
    excluded_at_signal_ = 0;
    excluded_per_tick_ = 0;
    period_now_.store(paused_ ? 0 : settings.period_ns, std::memory_order_relaxed);
    active_.store(true, std::memory_order_release);
    if (!paused_) direct_->turn_on(next_tick_);
    return true;
  }
  {
    // What the watcher reads above is published by this lock; it stays parked between runs,
    // so a run's start costs no thread (a short run would end before a new thread's first look).
    std::lock_guard<std::mutex> lock(thread_mutex_);
    paused_ = settings.paused;
    period_now_.store(paused_ ? 0 : settings.period_ns, std::memory_order_relaxed);
    active_.store(true, std::memory_order_release);
    watching_ = true;
  }
  if (thread_.joinable()) {
    thread_wake_.notify_all();
    return true;
  }
  try {
    thread_ = std::thread([this] { watch(); });
  } catch (const std::system_error& e) {
    if (error) *error = std::string("timer thread: ") + e.what();
    {
      std::lock_guard<std::mutex> lock(thread_mutex_);
      watching_ = false;
    }
    stop();
    return false;
  }
  return true;
}

SamplingTimer::SamplingTimer()
    : signal_(std::make_unique<TimerSignal>()),
      observer_(std::make_unique<ThreadObserver>()),
      looks_(std::make_unique<BlockedLooks>()),
      scheduling_(std::make_unique<WatcherScheduling>()),
      direct_(std::make_unique<DirectTicks>()) {}

void SamplingTimer::wake_watcher() { thread_wake_.notify_all(); }

SamplingTimer::~SamplingTimer() {
  stop();
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(thread_mutex_);
    quit_ = true;
  }
  thread_wake_.notify_all();
  thread_.join();
}

std::uint64_t SamplingTimer::stop() {
  if (!active_.exchange(false, std::memory_order_acq_rel)) return 0;
  period_now_.store(0, std::memory_order_relaxed);
  if (kernel_sends_) return stop_direct();
  {
    std::unique_lock<std::mutex> lock(thread_mutex_);
    wake_watcher();
    // Parked again: no signal is sent and no on_thread handler call runs after this.
    thread_parked_.wait(lock, [this] { return !watching_; });
  }
  signal_->release();
  observer_->close();  // the watcher is parked
  stopped_program_ns_ = reported(program_at(profiler_since_.load() ? profiler_since_.load() : now()));
  // Ticks crossed but not handled yet, and those completed since: no handler runs now. Those
  // of a thread blocked until now are off-CPU (the wall clock's).
  const std::uint64_t ready = ready_.exchange(0), since = cross_ticks(stopped_program_ns_);
  stopped_off_cpu_ = std::min(ready, ready_off_cpu_.exchange(0));
  return ready + since;
}

void SamplingTimer::set_period(std::uint64_t period_ns) {
  {
    std::lock_guard<std::mutex> lock(thread_mutex_);
    if (!active_.load(std::memory_order_acquire)) return;
    if (kernel_sends_) {
      // The handler takes the rate up at the signal timed here: the first tick at a random
      // point of the first period from now, as at start(). A handler the program replaced or
      // ignored gets no more signals from the kernel (under SIG_DFL one would end the process).
      const bool ours = period_ns == 0 || signal_->handler_is_ours();
      if (!ours) note_handler_lost();
      else handler_lost_ns_.store(0, std::memory_order_relaxed);
      const std::uint64_t asked = ours ? period_ns : 0;
      asked_period_.store(asked, std::memory_order_relaxed);
      asked_count_.fetch_add(1, std::memory_order_release);
      if (asked) {
        std::minstd_rand phase(static_cast<std::uint32_t>(monotonic_ns()));
        direct_->turn_on(1 + std::uniform_int_distribution<std::uint64_t>(0, asked - 1)(phase));
      } else {
        direct_->turn_off();
      }
      period_now_.store(asked, std::memory_order_relaxed);
      return;
    }
    if (period_ns == 0) {
      paused_ = true;
    } else {
      // The first tick at a random point of the first period from now, as at start().
      const bool was_paused = paused_;
      settings_.period_ns = period_ns;
      paused_ = false;
      const std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
      const std::uint64_t program = program_at(since ? since : now());
      if (was_paused || next_tick_ > program + period_ns) {
        draw_gap();  // a fresh draw for the phase
        next_tick_ = program + 1 + rng_ % period_ns;
      }
      missed_ = false;
    }
    period_now_.store(paused_ ? 0 : period_ns, std::memory_order_relaxed);
  }
  wake_watcher();
}

std::uint64_t SamplingTimer::draw_gap() {
  // xorshift64: a few shifts and xors on a member.
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  std::uint64_t p = settings_.period_ns;
  return std::max<std::uint64_t>(1, p / 2 + rng_ % p);
}

std::uint64_t SamplingTimer::cross_ticks(std::uint64_t program) {
  if (paused_ || program < next_tick_) return 0;
  std::uint64_t ticks = 0;
  // After a long stop of the clock's owner (a debugger, a suspended VM), cross the bulk in
  // whole periods instead of drawing each gap: the count is the same on average.
  std::uint64_t behind = program - next_tick_;
  if (behind / settings_.period_ns > 64) {
    std::uint64_t bulk = behind / settings_.period_ns - 64;
    ticks += bulk;
    next_tick_ += bulk * settings_.period_ns;
  }
  while (program >= next_tick_) {
    ++ticks;
    next_tick_ += draw_gap();
  }
  return ticks;
}

std::uint64_t SamplingTimer::program_ns() const {
  if (!running()) return stopped_program_ns_;
  return reported(clear_of_handlers([this] {
    const std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
    return program_at(since ? since : now());
  }));
}

void SamplingTimer::enter_profiler() {
  // A handler between the clock read and the store would find no work open and exclude its
  // own time (a reading before this call, 9253195 ns, came out 9247647 after it): the clock is
  // read again after it. The second pass cannot meet that: with the work open, a handler
  // excludes nothing.
  clear_of_handlers([this] {
    profiler_since_.store(now(), std::memory_order_relaxed);
    return true;
  });
  profiler_since_wall_ = monotonic_ns();
}

std::uint64_t SamplingTimer::leave_profiler() {
  std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  if (!since) return 0;
  const bool cpu = settings_.clock == TimerClock::Cpu;
  // (On the wall clock `since` is a monotonic reading already, and exact at any length.)
  const std::uint64_t wall = monotonic_ns(), from = cpu ? profiler_since_wall_ : since;
  std::uint64_t spent = wall > from ? wall - from : 0;
  if (cpu && spent > kShortStretchNs) {
    const std::uint64_t t = now();
    spent = t > since ? t - since : 0;
  }
  excluded_profiler_.fetch_add(spent, std::memory_order_relaxed);
  // A handler between now() and here sees the profiler's work still open and excludes nothing:
  // its time (one handler, in a window of two stores) stays program time.
  profiler_since_.store(0, std::memory_order_relaxed);
  return spent;
}

// Signal context, on the profiled thread. Async-signal-safe: clock_gettime, lock-free atomics
// and the TickHandler.
void SamplingTimer::on_signal() {
  if (!active_.load(std::memory_order_acquire)) return;
  signals_.fetch_add(1, std::memory_order_relaxed);
  const bool cpu = settings_.clock == TimerClock::Cpu;
  const std::uint64_t began = monotonic_ns();
  // On the CPU clock, the thread's clock as the watcher read it right before it sent this
  // signal (the tick's time, microseconds ago), not a read of our own (kShortStretchNs).
  const std::uint64_t raw = cpu ? sent_raw_.load(std::memory_order_relaxed) : began;
  std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  // Taken before the flag is cleared: the watcher adds to them only while one is in flight or
  // before it sends the next.
  in_flight_.store(false, std::memory_order_release);
  const std::uint64_t ticks = ready_.exchange(0, std::memory_order_acq_rel);
  const std::uint64_t off_cpu = std::min(ticks, ready_off_cpu_.exchange(0, std::memory_order_acq_rel));
  if (ticks) handler_(context_, ticks, off_cpu, reported(program_at(since ? since : raw)));
  if (!since) exclude_handler(began, raw);
}

// Inside the profiler's work the whole stretch is excluded by leave_profiler(): adding the
// handler's time too would exclude it twice and move program time backwards; so the handlers
// call this only outside it.
void SamplingTimer::exclude_handler(std::uint64_t began, std::uint64_t raw) {
  const std::uint64_t done = monotonic_ns();
  std::uint64_t spent = done > began ? done - began : 0;
  // Long (preempted, or a slow build): no more than the thread's clock ran since the tick's
  // reading `raw`, so program time cannot step back below the tick's.
  if (settings_.clock == TimerClock::Cpu && spent > kShortStretchNs) {
    const std::uint64_t t = now();
    spent = std::min(spent, t > raw ? t - raw : 0);
  }
  excluded_handler_.fetch_add(spent, std::memory_order_relaxed);
}

// Signal context, on the profiled thread: the kernel's signal for the task clock. Crosses the
// ticks due and times the next signal. Async-signal-safe: clock_gettime, one ioctl, atomics and
// the TickHandler.
void SamplingTimer::on_direct_signal() {
  if (!active_.load(std::memory_order_acquire)) return;
  signals_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t began = monotonic_ns();
  const std::uint64_t raw = now();  // the thread's CPU clock: the tick's time, exactly
  const std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  const std::uint64_t program = program_at(since ? since : raw);
  take_asked_rate(program, true);
  // A tick within the kernel's shortest period is due: timing the rest would cost a signal.
  const std::uint64_t ticks = cross_ticks(program + kDirectSlackNs);
  if (!paused_) {
    // The kernel counts the profiler's own work, which program time leaves out: the next
    // signal waits as much longer as that work took between the last two signals, else it
    // came early after each sample, found no tick due, and cost a second signal.
    const std::uint64_t excluded = excluded_profiler_.load(std::memory_order_relaxed) +
                                   excluded_handler_.load(std::memory_order_relaxed);
    excluded_per_tick_ = std::min(excluded - excluded_at_signal_, settings_.period_ns / 2);
    excluded_at_signal_ = excluded;
    direct_->next_in(next_tick_ - program + excluded_per_tick_);
  }
  if (ticks) handler_(context_, ticks, 0, reported(program));
  if (!since) exclude_handler(began, raw);
}

void SamplingTimer::take_asked_rate(std::uint64_t program, bool signalled) {
  const std::uint64_t asked = asked_count_.load(std::memory_order_acquire);
  if (asked == asked_seen_) return;
  asked_seen_ = asked;
  const std::uint64_t period = asked_period_.load(std::memory_order_relaxed);
  paused_ = period == 0;
  if (!period) return;
  settings_.period_ns = period;
  // The signal set_period() timed is the new rate's first tick; stop() before it came counts
  // none of the new rate.
  next_tick_ = signalled ? program : program + period;
}

void SamplingTimer::note_handler_lost() {
  std::uint64_t expected = 0;
  handler_lost_ns_.compare_exchange_strong(expected, std::max<std::uint64_t>(1, program_at(now())));
}

std::uint64_t SamplingTimer::stop_direct() {
  direct_->turn_off();
  // Replaced or ignored while the kernel signalled: the ticks stopped then, unseen.
  if (!signal_->handler_is_ours()) note_handler_lost();
  signal_->release();  // waits out a handler running on another thread
  direct_->close();
  stopped_program_ns_ = reported(program_at(profiler_since_.load() ? profiler_since_.load() : now()));
  take_asked_rate(stopped_program_ns_, false);
  stopped_off_cpu_ = 0;
  return cross_ticks(stopped_program_ns_);
}

SamplingTimer::SendResult SamplingTimer::send_signal() {
  // The program may have replaced or ignored our handler (signal(sig, SIG_DFL) would make the
  // next signal end the process): then no signal, and from when is said.
  if (!signal_->handler_is_ours()) {
    note_handler_lost();
    return SendResult::NotSent;
  }
  handler_lost_ns_.store(0, std::memory_order_relaxed);  // put back: ticks go on
  // A thread that blocked lately is signalled from its own CPU (see WatcherScheduling::follow);
  // one that has not is left alone.
  const bool blocks = blocked_seen_ns_ && last_look_ns_ - blocked_seen_ns_ < kBlockedLatelyNs;
  scheduling_->follow(follows_sleepers() && blocks ? observer_->processor() : -1);
  // Last, and right before the signal: the thread runs now. The time between this look and
  // the signal's arrival is the only window in which a tick can meet a sleep.
  if (observer_->state(true) == ThreadObserver::State::Blocked) return SendResult::Blocked;
  if (settings_.clock == TimerClock::Cpu) sent_raw_.store(observer_->cpu_at_last_look(), std::memory_order_relaxed);
  in_flight_.store(true, std::memory_order_release);
  if (!signal_->send(thread_tid_)) {
    in_flight_.store(false, std::memory_order_release);  // the queue is full, or the thread gone
    return SendResult::NotSent;
  }
  return SendResult::Sent;
}

// The polled CPU clock, at rates where a wake-up that waits behind the thread on its CPU is
// less than a period late: the watcher signals a thread that sleeps from that thread's CPU.
bool SamplingTimer::follows_sleepers() const {
  return settings_.clock == TimerClock::Cpu && settings_.period_ns >= kFollowMinPeriodNs;
}

// Hands the waiting ticks of a thread that the kernel says is asleep to on_blocked, which arms
// its wake-up: they then reach the stack it blocked in, where a signal once it runs again would
// find whatever ran up to a poll later (a sleeper that returns at once would be gone). True
// when they were handed over.
// On the CPU clock no tick falls due while the thread sleeps, and the first
// after its wake waited for the next look (up to 200 us), into whatever ran by then (a LÖVE
// game's love.update, right after the event pump that follows each frame's sleep, came out 4-6
// points over its CPU share at 1 kHz). Its wake is armed with no tick, once a block: the first
// safe point after it calls cross_at_wake, which wakes the watcher to aim at the next tick.
bool SamplingTimer::hand_over_blocked(std::uint64_t program) {
  if (in_flight_.load(std::memory_order_acquire)) return false;
  const bool ready = ready_.load(std::memory_order_acquire) != 0;
  const bool arm_wake = !ready && !wake_armed_ && settings_.clock == TimerClock::Cpu;
  if (!ready && !arm_wake) return false;
  if (observer_->state(true) != ThreadObserver::State::Blocked) return false;  // waiting for a CPU: not asleep
  const std::uint64_t ticks = ready_.exchange(0, std::memory_order_acq_rel);
  const std::uint64_t off_cpu = std::min(ticks, ready_off_cpu_.exchange(0, std::memory_order_acq_rel));
  if (ticks || arm_wake) settings_.on_blocked(context_, ticks, off_cpu, program);
  if (arm_wake) wake_armed_ = true;
  return true;
}

std::uint64_t SamplingTimer::cross_at_wake(std::uint64_t* off_cpu) {
  *off_cpu = 0;
  if (kernel_sends_) return 0;  // no watcher hands a wake over; the handler owns the crossing
  // The lock is never waited for: a thread waiting for it is asleep to the watcher, which held
  // it for a check and then handed that thread's ticks over as time blocked (in a LÖVE game,
  // about a quarter of the ticks due in love.update went so). The watcher, mid-check, crosses these
  // itself and signals them.
  std::unique_lock<std::mutex> lock(thread_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !active_.load(std::memory_order_acquire)) return 0;
  const std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  const std::uint64_t crossed = cross_ticks(program_at(since ? since : now()));
  // Of those, the share of the stretch since the last look that the thread spent off the CPU
  // (the wall clock's only: on the CPU clock no tick falls due off it).
  std::uint64_t off = 0;
  if (crossed && settings_.clock == TimerClock::Wall) {
    const std::uint64_t wall = monotonic_ns(), cpu = clock_ns(thread_cpu_);
    const std::uint64_t span = wall > last_look_ns_ ? wall - last_look_ns_ : 0;
    const std::uint64_t last = observer_->cpu_at_last_look();
    const std::uint64_t ran = cpu > last ? cpu - last : 0;
    if (span > ran) off = (crossed * (span - ran) + span / 2) / span;
  }
  const std::uint64_t ready = ready_.exchange(0, std::memory_order_acq_rel);
  *off_cpu = std::min(ready, ready_off_cpu_.exchange(0, std::memory_order_acq_rel)) + std::min(off, crossed);
  woke_ = true;
  // The next tick falls due before the watcher's next look (a 10 kHz wall clock, where the
  // looks at a sleeper come every 200 us or more): it would wait for that look, and go to
  // whatever runs then (a LÖVE game at 10 kHz gave love.update 0.03-0.09 of the CPU samples
  // for 0.10-0.18). Woken now, the watcher aims at it. (A wake-up from here may bring the
  // watcher onto this CPU: woken late there, it moves; see watcher_scheduling.hpp.)
  const std::uint64_t program = program_at(since ? since : now()), look = monotonic_ns();
  if (next_tick_ > program && next_look_ns_ > look && next_tick_ - program < next_look_ns_ - look) wake_watcher();
  return ready + crossed;
}

// The watcher: one check per tick's time. Ticks are counted here; a handler takes them.
std::uint64_t SamplingTimer::check_ticks() {
  std::uint64_t raw = now();
  last_look_ns_ = settings_.clock == TimerClock::Wall ? raw : monotonic_ns();
  // Inside the profiler's own work, program time stopped when that work began.
  std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  std::uint64_t program = program_at(since ? since : raw);
  std::uint64_t ticks = cross_ticks(program);
  const std::uint64_t period = settings_.period_ns;
  std::uint64_t blocked_poll = 0;  // when the thread is blocked: how soon to look again
  if (settings_.on_thread) {
    if (ticks) handler_(context_, ticks, 0, program);
  } else {
    const bool wall = settings_.clock == TimerClock::Wall;
    // (On the CPU clock `raw` is the thread's clock, read just now: the observer's first read.)
    // With ticks to send, a clock that moved is enough: send_signal() looks closely (the
    // kernel's task state) right before the signal, and a thread blocked by then gets none.
    const bool sending = (ticks || ready_.load(std::memory_order_acquire)) && !in_flight_.load(std::memory_order_acquire);
    const bool runs = observer_->state(false, wall ? 0 : raw, sending) != ThreadObserver::State::Blocked;
    if (ticks) {
      // Ticks due while the thread is blocked wait for it, counted as off-CPU on the wall
      // clock; a signal now would cut its sleep or restart its read. (On the CPU clock they
      // fell due while it ran, before it blocked: CPU time.)
      if (!runs && wall) ready_off_cpu_.fetch_add(ticks, std::memory_order_relaxed);
      ready_.fetch_add(ticks, std::memory_order_release);
    }
    looks_->saw(runs, last_look_ns_);
    // Blocked by the clock's guess (a thread waiting for a CPU is still too): asked of the
    // kernel, at most once a quarter of kBlockedLatelyNs, where send_signal() follows sleepers.
    if (!runs && follows_sleepers() && last_look_ns_ - blocked_seen_ns_ >= kBlockedLatelyNs / 4 &&
        observer_->asleep())
      blocked_seen_ns_ = last_look_ns_;
    if (runs || woke_) wake_armed_ = false;  // it woke: its next block is armed again
    if (!runs && settings_.on_blocked && hand_over_blocked(program)) return looks_->pace();
    if (ready_.load(std::memory_order_acquire) && runs && !in_flight_.load(std::memory_order_acquire)) {
      const SendResult sent = send_signal();
      // Blocked after all: the thread ran since the last look, then blocked. On the wall clock
      // the ticks this look crossed fell due now, while it is off the CPU; counted as on it,
      // they went with the first sample after the wake to whatever runs then.
      if (sent == SendResult::Blocked && ticks && wall) ready_off_cpu_.fetch_add(ticks, std::memory_order_relaxed);
      if (sent == SendResult::Blocked) {
        // As for a thread found blocked above: its ticks go to the stack it blocked in.
        looks_->saw(false, last_look_ns_);
        blocked_seen_ns_ = last_look_ns_;
        if (settings_.on_blocked) hand_over_blocked(program);
        return looks_->pace();
      }
      if (sent == SendResult::NotSent) return looks_->pace();  // the handler is not ours, or the queue full
    }
    // Waiting ticks of a blocked thread: look again soon, so that they reach the stack it
    // wakes in rather than one that ran a period later.
    if (ready_.load(std::memory_order_relaxed) && !runs) return looks_->pace();
    if (!runs) blocked_poll = looks_->pace();
  }
  // Aim at the next tick. Program time runs no faster than the monotonic clock: sleeping the
  // program time still ahead never oversleeps it. After two checks in a row too early while the
  // thread runs (program time is held) the next waits a period.
  std::uint64_t ahead = next_tick_ > program ? next_tick_ - program : 0;
  // A wake's crossing (cross_at_wake) took this check's ticks: not a miss; nor is a look at a
  // blocked thread (the looks at a sleeper keep their own pace, and the first look after the
  // wake must aim at the next tick, not a period on).
  bool missed_again = ticks == 0 && missed_ && !woke_;
  missed_ = ticks == 0 && !woke_ && !blocked_poll;
  woke_ = false;
  const std::uint64_t next = missed_again ? std::max(ahead, period) : ahead + 2000;
  // Asleep on the CPU clock: no tick falls due until it has run `ahead` again, but its wake
  // is only seen by a look.
  return blocked_poll ? std::min(next, blocked_poll) : next;
}

// The watcher thread: sleeps to each check while a run is on; parked between runs, until the
// timer is destroyed. A wake-up that comes late may move it (watcher_scheduling.hpp).
void SamplingTimer::watch() {
  WatcherScheduling& scheduling = *scheduling_;
  scheduling.begin();
  // The watcher takes none of the program's signals (ours go to the profiled thread by id).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock<std::mutex> lock(thread_mutex_);
  for (;;) {
    thread_wake_.wait(lock, [this] { return quit_ || watching_; });
    if (quit_) return;
    std::uint64_t delay = next_tick_;
    while (active_.load(std::memory_order_acquire)) {
      if (paused_) {
        // No ticks wanted: wait for a rate or the end of the run, looking at nothing.
        thread_wake_.wait(lock, [this] { return !paused_ || !active_.load(std::memory_order_acquire); });
        const std::uint64_t program = program_at(now());
        delay = next_tick_ > program ? next_tick_ - program : 0;
        continue;
      }
      const std::uint64_t due = monotonic_ns() + delay;
      next_look_ns_ = due;
      thread_wake_.wait_for(lock, std::chrono::nanoseconds(std::max<std::uint64_t>(delay, 1000)));  // stop() and set_period() end it
      if (!active_.load(std::memory_order_acquire) || paused_) continue;
      if (monotonic_ns() > due + WatcherScheduling::kLateWakeNs) scheduling.woke_late(observer_->processor());
      if (settings_.on_thread) signals_.fetch_add(1, std::memory_order_relaxed);
      delay = check_ticks();
    }
    watching_ = false;
    thread_parked_.notify_all();
  }
}

std::string SamplingTimer::delivery() const {
  if (settings_.on_thread) return "on the timer's thread";
  if (kernel_sends_) return "task clock, the kernel's SIGTRAP";
  if (settings_.clock == TimerClock::Wall) return "polled wall clock, queued signal";
  return "polled CPU clock, queued signal" + (why_polled_.empty() ? std::string() : " (" + why_polled_ + ")");
}

}  // namespace scriptprof
