#include "scriptprof/sampling_timer.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <system_error>

namespace scriptprof {

// ---- Process-wide signal plumbing ---------------------------------------------------------
//
// One SIGPROF handler serves every timer. A timer passes its own address in si_value; the
// handler only trusts addresses found in this registry, and passes any other SIGPROF on to
// the handler that was installed before ours.

namespace {

constexpr int kMaxTimers = 256;
std::atomic<SamplingTimer*> g_timers[kMaxTimers];  // lock-free atomics: safe to read in a handler
struct sigaction g_previous;                       // written once, before our handler is live
std::once_flag g_install_once;
std::mutex g_registry_mutex;                       // serialises slot allocation (normal context)
std::atomic<int> g_in_handler{0};                  // handlers between registry look-up and return

void forward_to_previous(int sig, siginfo_t* info, void* uctx) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, uctx);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
  // A foreign SIGPROF under SIG_DFL would have killed the process; ignoring it is kinder.
}

// Async-signal-safe: it reads lock-free atomics, calls SamplingTimer::on_signal (which uses
// only clock_gettime and atomics plus the registered TickHandler, itself required to be
// async-signal-safe), and saves/restores errno so the interrupted code never sees a change.
void sigprof_handler(int sig, siginfo_t* info, void* uctx) {
  int saved_errno = errno;
  g_in_handler.fetch_add(1, std::memory_order_acq_rel);
  SamplingTimer* target = nullptr;
  if (info && info->si_code == SI_TIMER) {
    void* p = info->si_value.sival_ptr;
    for (auto& slot : g_timers)
      if (slot.load(std::memory_order_acquire) == p && p) {
        target = static_cast<SamplingTimer*>(p);
        break;
      }
    // A stale tick of a timer already stopped: swallow it (it is ours by its code and value).
    if (!target && p) {
      g_in_handler.fetch_sub(1, std::memory_order_acq_rel);
      errno = saved_errno;
      return;
    }
  }
  if (target)
    target->on_signal();
  else
    forward_to_previous(sig, info, uctx);
  g_in_handler.fetch_sub(1, std::memory_order_acq_rel);
  errno = saved_errno;
}

bool install_handler(std::string* error) {
  bool ok = true;
  std::call_once(g_install_once, [&] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sigprof_handler;
    // SA_RESTART: system calls interrupted by a tick resume instead of failing with EINTR.
    // SA_ONSTACK: the handler runs on the thread's alternate stack (ensure_signal_stack).
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, &g_previous) != 0) {
      ok = false;
      if (error) *error = std::string("sigaction(SIGPROF): ") + std::strerror(errno);
    }
  });
  // The handler stays installed for the life of the process: restoring SIG_DFL while a tick is
  // still pending would kill the process.
  return ok;
}

// The sampled thread's alternate signal stack. A handler frame on the thread's own stack
// overwrites whatever lies below the interrupted code's stack pointer past the 128-byte red
// zone, and some code keeps live data there: AngelScript 2.35's native calls, which GCC turns
// into a tail call, read their arguments from the caller's frame after popping it (a tick at
// that instant made a registered method run with a null object). On its own stack the handler
// touches nothing of the interrupted code. A thread that already has one (ASan's, the host's)
// keeps it.
struct SignalStack {
  void* memory = nullptr;
  void ensure() {
    stack_t current;
    if (memory || (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE))) return;
    long wanted = sysconf(_SC_SIGSTKSZ);
    std::size_t size = std::max<std::size_t>(64 * 1024, wanted > 0 ? static_cast<std::size_t>(wanted) : 0);
    memory = std::malloc(size);
    if (!memory) return;  // the handler then runs on the thread's stack, as before
    stack_t ss;
    ss.ss_sp = memory;
    ss.ss_size = size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, nullptr) != 0) {
      std::free(memory);
      memory = nullptr;
    }
  }
  ~SignalStack() {  // at thread exit: no handler can be running on it in this normal context
    if (!memory) return;
    stack_t current;
    if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == memory) {
      stack_t off;
      std::memset(&off, 0, sizeof off);
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
    std::free(memory);
  }
};

void ensure_signal_stack() {
  thread_local SignalStack stack;
  stack.ensure();
}

timespec timespec_of(std::uint64_t ns) {
  return {static_cast<time_t>(ns / 1'000'000'000u), static_cast<long>(ns % 1'000'000'000u)};
}

}  // namespace

std::uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);  // async-signal-safe (POSIX)
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// ---- Timer -----------------------------------------------------------------------------------

std::uint64_t SamplingTimer::now() const { return clock_ns(clock_id_); }

std::uint64_t SamplingTimer::program_at(std::uint64_t raw) const {
  std::uint64_t excluded = excluded_profiler_.load(std::memory_order_relaxed) +
                           excluded_handler_.load(std::memory_order_relaxed);
  std::uint64_t elapsed = raw > start_raw_ ? raw - start_raw_ : 0;
  return elapsed > excluded ? elapsed - excluded : 0;
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
  if (!settings.on_thread) {
    if (!install_handler(error)) return false;
    ensure_signal_stack();  // start() runs on the sampled thread
  }
  settings_ = settings;
  handler_ = handler;
  context_ = context;
  if (settings.clock == TimerClock::Cpu) {
    // This thread's CPU clock, readable from any thread (stop() may run elsewhere).
    if (int rc = pthread_getcpuclockid(pthread_self(), &clock_id_); rc != 0) {
      if (error) *error = std::string("pthread_getcpuclockid: ") + std::strerror(rc);
      return false;
    }
  } else {
    clock_id_ = CLOCK_MONOTONIC;
  }
  if (!settings.on_thread) {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    for (int i = 0; i < kMaxTimers; ++i)
      if (!g_timers[i].load()) {
        slot_ = i;
        break;
      }
    if (slot_ < 0) {
      if (error) *error = "too many sampling timers running at once";
      return false;
    }
    g_timers[slot_].store(this, std::memory_order_release);
  }
  excluded_profiler_ = 0;
  excluded_handler_ = 0;
  signals_ = 0;
  thread_tid_ = gettid();
  start_raw_ = now();
  profiler_since_ = settings.start_held ? start_raw_ : 0;
  // The first tick falls at a uniformly random point of the first period, not at its end: then
  // a run of T seconds expects exactly T/period ticks, where a fixed phase always drops the
  // last part period (10% of a 50 ms run at 100 Hz).
  std::minstd_rand phase_rng(static_cast<std::uint32_t>(start_raw_ ^ (start_raw_ >> 32) ^
                                                          static_cast<std::uint64_t>(thread_tid_)));
  next_tick_ = 1 + std::uniform_int_distribution<std::uint64_t>(0, settings.period_ns - 1)(phase_rng);
  rng_ = phase_rng() | 1u;  // any non-zero state
  missed_ = false;
  excluded_at_signal_ = 0;

  if (settings.on_thread) {
    active_.store(true, std::memory_order_release);
    try {
      thread_ = std::thread([this] { thread_loop(); });
    } catch (const std::system_error& e) {
      active_.store(false);
      if (error) *error = std::string("timer thread: ") + e.what();
      return false;
    }
    return true;
  }

  struct sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;  // aimed at this thread, never an arbitrary one
  sev.sigev_signo = SIGPROF;
  sev.sigev_value.sival_ptr = this;
#ifdef sigev_notify_thread_id
  sev.sigev_notify_thread_id = thread_tid_;
#else
  sev._sigev_un._tid = thread_tid_;
#endif
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer_id_) != 0) {
    if (error) *error = std::string("timer_create: ") + std::strerror(errno);
    g_timers[slot_].store(nullptr);
    slot_ = -1;
    return false;
  }
  active_.store(true, std::memory_order_release);
  struct itimerspec its;
  its.it_interval = timespec_of(0);  // one-shot: on_signal re-arms it for the next tick
  // The first check comes at the first tick; program time never runs ahead of the clock.
  its.it_value = timespec_of(next_tick_);
  if (timer_settime(timer_id_, 0, &its, nullptr) != 0) {
    if (error) *error = std::string("timer_settime: ") + std::strerror(errno);
    stop();
    return false;
  }
  return true;
}

std::uint64_t SamplingTimer::stop() {
  if (!active_.exchange(false, std::memory_order_acq_rel)) return 0;
  if (settings_.on_thread) {
    {
      std::lock_guard<std::mutex> lock(thread_mutex_);
    }
    thread_wake_.notify_all();
    thread_.join();  // no handler call runs after this
    stopped_program_ns_ = program_at(profiler_since_.load() ? profiler_since_.load() : now());
    return cross_ticks(stopped_program_ns_);
  }
  timer_delete(timer_id_);
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    g_timers[slot_].store(nullptr, std::memory_order_release);
    slot_ = -1;
  }
  // A handler on another thread may have found us before the slot was cleared: wait it out.
  // (On the profiled thread itself no handler can be running here.)
  while (g_in_handler.load(std::memory_order_acquire) != 0 && !on_profiled_thread()) sched_yield();
  stopped_program_ns_ = program_at(profiler_since_.load() ? profiler_since_.load() : now());
  return cross_ticks(stopped_program_ns_);  // no handler runs now: the tick state is ours
}

std::uint64_t SamplingTimer::draw_gap() {
  // xorshift64: a few shifts and xors on a member, safe in a signal handler.
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  std::uint64_t p = settings_.period_ns;
  return std::max<std::uint64_t>(1, p / 2 + rng_ % p);
}

std::uint64_t SamplingTimer::cross_ticks(std::uint64_t program) {
  if (program < next_tick_) return 0;
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

// Async-signal-safe: timer_settime is on POSIX's list.
void SamplingTimer::rearm(std::uint64_t delay_ns) {
  struct itimerspec its;
  its.it_interval = timespec_of(0);
  its.it_value = timespec_of(std::max<std::uint64_t>(delay_ns, 1000));  // never a signal storm
  // stop() clears active_ before it deletes the timer, and waits for this handler: a timer
  // deleted under us makes this fail with EINVAL, which is harmless.
  if (active_.load(std::memory_order_acquire)) timer_settime(timer_id_, 0, &its, nullptr);
}

std::uint64_t SamplingTimer::program_ns() const {
  if (!running()) return stopped_program_ns_;
  return clear_of_handlers([this] {
    const std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
    return program_at(since ? since : now());
  });
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
}

std::uint64_t SamplingTimer::leave_profiler() {
  std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  if (!since) return 0;
  std::uint64_t t = now();
  std::uint64_t spent = t > since ? t - since : 0;
  excluded_profiler_.fetch_add(spent, std::memory_order_relaxed);
  // A handler between now() and here sees the profiler's work still open and excludes nothing:
  // its time (one handler, in a window of two stores) stays program time.
  profiler_since_.store(0, std::memory_order_relaxed);
  return spent;
}

// Signal context. Async-signal-safe: clock_gettime, lock-free atomics and the TickHandler.
void SamplingTimer::on_signal() {
  if (!active_.load(std::memory_order_acquire)) return;
  signals_.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t raw = now();
  std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  rearm(check_ticks());
  // Inside the profiler's work the whole stretch is excluded by leave_profiler(): adding the
  // handler's time too would exclude it twice and move program time backwards.
  if (!since) {
    std::uint64_t done = now();
    excluded_handler_.fetch_add(done > raw ? done - raw : 0, std::memory_order_relaxed);
  }
}

// Signal context or the timer thread (never both: a timer delivers one way).
std::uint64_t SamplingTimer::check_ticks() {
  std::uint64_t raw = now();
  // Inside the profiler's own work, program time stopped when that work began.
  std::uint64_t since = profiler_since_.load(std::memory_order_relaxed);
  std::uint64_t program = program_at(since ? since : raw);
  std::uint64_t ticks = cross_ticks(program);
  if (ticks) handler_(context_, ticks, program);
  // Aim at the next tick. Program time runs no faster than the monotonic clock, but it
  // lags it by the profiler's own work: aim that much later, as much as the last gap had
  // (usually one sample's walk) and half again, so the check seldom comes early and costs
  // a second one; late by a few microseconds is harmless (the phase is random either way).
  // A tick is never counted before it is due: that would move it to a time the program's
  // phase decides (the first instruction after a held start). After two checks in a row
  // too early (the thread sleeps, or program time is held) the next try waits at least a
  // period, as a periodic timer would.
  std::uint64_t excluded = excluded_profiler_.load(std::memory_order_relaxed) +
                           excluded_handler_.load(std::memory_order_relaxed);
  std::uint64_t lag = excluded - excluded_at_signal_;
  excluded_at_signal_ = excluded;
  std::uint64_t ahead = next_tick_ > program ? next_tick_ - program : 0;
  bool missed_again = ticks == 0 && missed_;
  missed_ = ticks == 0;
  return missed_again ? std::max(ahead, settings_.period_ns) : ahead + std::min(lag + lag / 2 + 2000, settings_.period_ns / 2);
}

// The timer thread: sleeps to each check (with the least timer slack the kernel allows, or a
// 10 kHz rate would be woken 50 us late), until stop() wakes it.
void SamplingTimer::thread_loop() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  std::uint64_t delay = next_tick_;
  std::unique_lock<std::mutex> lock(thread_mutex_);
  while (active_.load(std::memory_order_acquire)) {
    thread_wake_.wait_for(lock, std::chrono::nanoseconds(std::max<std::uint64_t>(delay, 1000)));
    if (!active_.load(std::memory_order_acquire)) break;
    signals_.fetch_add(1, std::memory_order_relaxed);
    delay = check_ticks();
  }
}

bool SamplingTimer::on_profiled_thread() const { return gettid() == thread_tid_; }

}  // namespace scriptprof
