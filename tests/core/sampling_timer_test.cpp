#include <catch2/catch.hpp>

#include <cmath>
#include <csignal>
#include <vector>

#include <dirent.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "directory_entries.hpp"
#include "scriptprof/sampling_timer.hpp"

using namespace scriptprof;

namespace {

std::atomic<std::uint64_t> g_ticks{0};
std::atomic<std::uint64_t> g_calls{0};
void count_ticks(void*, std::uint64_t ticks, std::uint64_t, std::uint64_t) {  // async-signal-safe: atomics only
  g_ticks += ticks;
  ++g_calls;
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void burn_cpu(double seconds) {
  double end = thread_cpu_seconds() + seconds;
  volatile std::uint64_t x = 0;
  while (thread_cpu_seconds() < end)
    for (int i = 0; i < 10000; ++i) x = x + static_cast<std::uint64_t>(i);
}

void sleep_for(double seconds) {
  timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

// Ticks are whole periods of program time, so their count follows from the clock itself:
// these checks hold however the machine's scheduler delays signals.
TEST_CASE("CPU clock: one tick per period of CPU time - at rates above the 250 Hz kernel tick", "[timer]") {
  for (std::uint64_t hz : {100u, 1000u, 4000u}) {
    SamplingTimer t;
    g_ticks = 0;
    std::string error;
    REQUIRE(t.start({TimerClock::Cpu, 1'000'000'000u / hz}, count_ticks, nullptr, &error));
    burn_cpu(0.3);
    g_ticks += t.stop();  // the periods completed after the last signal
    double expected = static_cast<double>(t.program_ns()) / 1e9 * static_cast<double>(hz);
    INFO("hz " << hz << ": ticks " << g_ticks.load() << ", expected " << expected);
    // The gaps are uniform in [period/2, 3*period/2): the count of a run of N periods has a
    // standard deviation of sqrt(N/12) (a renewal process), plus the last partial gap.
    double bound = 1.0 + 4.0 * std::sqrt(expected / 12.0);
    CHECK(static_cast<double>(g_ticks.load()) <= expected + bound);
    CHECK(static_cast<double>(g_ticks.load()) >= expected - bound);
    CHECK(t.program_ns() >= 250'000'000u);  // the burn itself, less the profiler's own time
    CHECK(t.signals() > 0);
  }
}

namespace {
std::vector<std::uint64_t> g_tick_times;  // program time of each handler call (reserved: no allocation in the handler)
void record_tick_time(void*, std::uint64_t, std::uint64_t, std::uint64_t program_ns) {
  if (g_tick_times.size() < g_tick_times.capacity()) g_tick_times.push_back(program_ns);
}
}  // namespace

TEST_CASE("ticks fall at random phases of the period - a loop repeating at the sampling rate is not aliased", "[timer]") {
  // A fixed period samples a program that repeats with that period at one phase every time.
  // Here the phase of each tick within the period must be uniform: 4 bins of ~25% each
  // (about 500 ticks: a bin's standard deviation is 1.9 points; 4 of them allowed).
  const std::uint64_t period = 1'000'000;
  SamplingTimer t;
  g_tick_times.clear();
  g_tick_times.reserve(4096);
  std::string error;
  REQUIRE(t.start({TimerClock::Cpu, period}, record_tick_time, nullptr, &error));
  burn_cpu(0.5);
  t.stop();
  REQUIRE(g_tick_times.size() >= 300);
  int bins[4] = {0, 0, 0, 0};
  for (std::uint64_t at : g_tick_times) ++bins[(at % period) * 4 / period];
  double n = static_cast<double>(g_tick_times.size());
  for (int b : bins) {
    INFO("bins " << bins[0] << " " << bins[1] << " " << bins[2] << " " << bins[3]);
    CHECK(std::abs(b / n - 0.25) < 4 * std::sqrt(0.25 * 0.75 / n));
  }
}

namespace {
// The phase a frame is in, read by the tick handler (async-signal-safe: a sig_atomic_t and atomics).
volatile std::sig_atomic_t g_phase = 0;
std::atomic<std::uint64_t> g_phase_ticks[2];
void count_phase_ticks(void*, std::uint64_t ticks, std::uint64_t, std::uint64_t) { g_phase_ticks[g_phase] += ticks; }
}  // namespace

// A tick that falls due in kernel code (a system call) is charged where the thread is when it
// returns, not later: frames of 1.4 ms of system calls (clock_gettime of the process CPU clock,
// a real call) then 0.6 ms of plain computation, at 500 Hz. A perf task clock event (branch
// wip/task-clock-ticks) fires in user space only: backed up by a queued signal only a look
// later, the calls' share came out 0.53 for 0.70 (self-timed, waiting a whole span after a
// skipped firing, 0.41).
TEST_CASE("CPU clock: ticks due in system calls go to the code that made them", "[timer]") {
  SamplingTimer t;
  std::string error;
  g_phase_ticks[0] = 0;
  g_phase_ticks[1] = 0;
  double in_calls = 0, in_code = 0;
  REQUIRE(t.start({TimerClock::Cpu, 2'000'000}, count_phase_ticks, nullptr, &error));
  for (int frame = 0; frame < 1200; ++frame) {
    double t0 = thread_cpu_seconds(), now = t0;
    g_phase = 1;
    timespec ts;
    while ((now = thread_cpu_seconds()) < t0 + 0.0014) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    g_phase = 0;
    in_calls += now - t0;
    t0 = now;
    volatile std::uint64_t x = 0;
    while ((now = thread_cpu_seconds()) < t0 + 0.0006)  // a clock read per ~20 us: user code
      for (int i = 0; i < 20000; ++i) x = x + static_cast<std::uint64_t>(i);
    in_code += now - t0;
  }
  t.stop();
  const double calls = static_cast<double>(g_phase_ticks[1]), code = static_cast<double>(g_phase_ticks[0]);
  const double n = calls + code, truth = in_calls / (in_calls + in_code), share = calls / std::max(n, 1.0);
  INFO(t.delivery() << ": system calls " << share << " of " << n << " ticks, CPU time says " << truth);
  REQUIRE(n >= 900);
  CHECK(std::abs(share - truth) <= 4 * std::sqrt(truth * (1 - truth) / n) + 0.02);
}

TEST_CASE("the first tick's phase is random - so short runs expect duration / period ticks", "[timer]") {
  // 2.5 periods of CPU time: a fixed phase gives 2 ticks every time, a random one 2 or 3,
  // 2.5 on average (standard error 0.035 over 200 runs).
  std::string error;
  std::uint64_t total = 0;
  const int runs = 200;
  for (int i = 0; i < runs; ++i) {
    SamplingTimer t;
    g_ticks = 0;
    REQUIRE(t.start({TimerClock::Cpu, 1'000'000}, count_ticks, nullptr, &error));
    burn_cpu(0.0025);
    std::uint64_t pending = t.stop();
    total += g_ticks.load() + pending;
  }
  double mean = static_cast<double>(total) / runs;
  CHECK(mean > 2.3);
  CHECK(mean < 2.8);  // program time runs a little past the burn (start and stop themselves)
}

TEST_CASE("CPU clock: no ticks while the thread sleeps - wall clock: ticks go on", "[timer]") {
  std::string error;
  {
    SamplingTimer t;
    g_ticks = 0;
    REQUIRE(t.start({TimerClock::Cpu, 1'000'000}, count_ticks, nullptr, &error));
    sleep_for(0.2);
    t.stop();
    CHECK(g_ticks.load() < 20);  // a sleeping thread uses almost no CPU time
    CHECK(t.program_ns() < 20'000'000u);
  }
  {
    SamplingTimer t;
    g_ticks = 0;
    REQUIRE(t.start({TimerClock::Wall, 1'000'000}, count_ticks, nullptr, &error));
    sleep_for(0.2);
    // The sleeping thread gets no signal: its ticks wait for it, and stop() hands them over.
    const std::uint64_t waiting = t.stop();
    CHECK(g_ticks.load() + waiting >= 150);
    CHECK(t.program_ns() >= 190'000'000u);
  }
}

TEST_CASE("the profiler's own time is not program time - so it cannot create ticks", "[timer]") {
  SamplingTimer t;
  g_ticks = 0;
  std::string error;
  REQUIRE(t.start({TimerClock::Wall, 1'000'000}, count_ticks, nullptr, &error));
  t.enter_profiler();
  sleep_for(0.1);  // a slow "stack walk"
  t.leave_profiler();
  std::uint64_t program = t.program_ns();
  t.stop();
  CHECK(program < 20'000'000u);
  CHECK(g_ticks.load() < 20);
}

namespace {
std::atomic<std::uint64_t> g_handler_burn_ns{0};
std::atomic<std::uint64_t> g_burned_ns{0};
// Async-signal-safe: clock_gettime and atomics.
void burning_handler(void*, std::uint64_t, std::uint64_t, std::uint64_t) {
  const std::uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  std::uint64_t now = start;
  while (now - start < g_handler_burn_ns.load()) now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  g_burned_ns += now - start;
  ++g_calls;
}
}  // namespace

// The handler's stretch is timed on the monotonic clock when it is short (no system call) and
// on the CPU clock when long: either way it is not program time.
TEST_CASE("CPU clock: the handler's own time is not program time - short or long", "[timer]") {
  for (const std::uint64_t burn : {8'000u, 150'000u}) {
    CAPTURE(burn);
    g_handler_burn_ns = burn;
    g_burned_ns = 0;
    g_calls = 0;
    SamplingTimer t;
    std::string error;
    REQUIRE(t.start({TimerClock::Cpu, burn * 8}, burning_handler, nullptr, &error));
    const double cpu0 = thread_cpu_seconds();
    burn_cpu(0.3);
    const double cpu = thread_cpu_seconds() - cpu0;
    const std::uint64_t program = t.program_ns();
    t.stop();
    const double burned = static_cast<double>(g_burned_ns.load()) / 1e9;
    CAPTURE(cpu, burned, program, g_calls.load());
    REQUIRE(g_calls.load() > 20);
    // Counted as program time the handlers' share would be in it; excluded, program time is
    // the rest (less the signals' delivery, which is program time).
    CHECK(static_cast<double>(program) / 1e9 < cpu - 0.8 * burned);
    CHECK(static_cast<double>(program) / 1e9 > 0.5 * (cpu - burned));
  }
}

TEST_CASE("program time never runs backwards - signals inside the profiler's work are not excluded twice", "[timer]") {
  SamplingTimer t;
  std::string error;
  // Held from the start, as the Lua binding does while it sets a run up: signals keep coming.
  REQUIRE(t.start({TimerClock::Cpu, 100'000, true}, count_ticks, nullptr, &error));
  burn_cpu(0.02);  // ~200 signals, all inside the held stretch
  CHECK(t.program_ns() == 0);
  t.leave_profiler();
  burn_cpu(0.01);
  std::uint64_t before = t.program_ns();
  // The 10 ms after the release are program time, less the handlers' own (at 100 kHz on a
  // loaded machine that can be most of it: a bound here failed under a parallel build).
  CHECK(before > 0);
  t.enter_profiler();
  std::uint64_t frozen = t.program_ns();
  burn_cpu(0.02);
  CHECK(t.program_ns() == frozen);  // signals in the profiler's work do not move it
  t.leave_profiler();
  std::uint64_t after = t.program_ns();
  t.stop();
  CHECK(frozen >= before);
  CHECK(after >= frozen);
  CHECK(after < frozen + 5'000'000u);
}

TEST_CASE("start refuses a zero period and a second start - stop is idempotent", "[timer]") {
  SamplingTimer t;
  std::string error;
  CHECK_FALSE(t.start({TimerClock::Cpu, 0}, count_ticks, nullptr, &error));
  CHECK(error == "sampling period must be positive");
  REQUIRE(t.start({TimerClock::Cpu, 1'000'000}, count_ticks, nullptr, &error));
  CHECK_FALSE(t.start({TimerClock::Cpu, 1'000'000}, count_ticks, nullptr, &error));
  CHECK(error == "timer already running");
  t.stop();
  t.stop();
  CHECK_FALSE(t.running());
  // Restartable after a stop.
  CHECK(t.start({TimerClock::Wall, 1'000'000}, count_ticks, nullptr, &error));
}

// The window inside enter_profiler, between its clock read and its store: a signal there once
// excluded its handler's time from a program time already read without it, and program time
// stepped back by a few microseconds (1 run in ~12 of the test above under load). Many brackets
// at 100 kHz meet that window often.
TEST_CASE("program time read just before and after entering the profiler never steps back", "[timer]") {
  SamplingTimer t;
  std::string error;
  REQUIRE(t.start({TimerClock::Cpu, 10'000}, count_ticks, nullptr, &error));
  std::uint64_t backwards = 0, worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t before = t.program_ns();
    t.enter_profiler();
    const std::uint64_t frozen = t.program_ns();
    t.leave_profiler();
    const std::uint64_t after = t.program_ns();
    if (frozen < before || after < frozen) {
      ++backwards;
      worst = std::max(worst, std::max(before > frozen ? before - frozen : 0, frozen > after ? frozen - after : 0));
    }
  }
  t.stop();
  CAPTURE(worst);
  CHECK(backwards == 0);
  CHECK(t.signals() > 100);  // the handler did run among the brackets
}

namespace {
int task_count() { return directory_entries("/proc/self/task"); }
}  // namespace

// A run's start makes no thread: the watcher parks between runs (a short run would end before a
// new thread's first look), and goes with the timer.
TEST_CASE("the watcher thread is made once and parked between runs - and goes with the timer", "[timer]") {
  const int before = task_count();
  std::string error;
  {
    SamplingTimer t;
    for (int i = 0; i < 200; ++i) {
      REQUIRE(t.start({i % 2 ? TimerClock::Cpu : TimerClock::Wall, 100'000}, count_ticks, nullptr, &error));
      t.stop();
    }
    CHECK(task_count() == before + 1);
    g_ticks = 0;
    REQUIRE(t.start({TimerClock::Cpu, 1'000'000}, count_ticks, nullptr, &error));
    burn_cpu(0.05);
    const std::uint64_t waiting = t.stop();
    CHECK(g_ticks + waiting >= 30);  // the parked watcher watches the next run
  }
  CHECK(task_count() == before);
}

TEST_CASE("a paused timer ticks not at all - set_period from another thread gives it a rate", "[timer]") {
  SamplingTimer t;
  g_ticks = 0;
  g_calls = 0;
  std::string error;
  TimerSettings paused{TimerClock::Cpu, 1'000'000};
  paused.paused = true;
  REQUIRE(t.start(paused, count_ticks, nullptr, &error));
  CHECK(t.period_ns() == 0);
  burn_cpu(0.1);
  CHECK(g_calls == 0);  // 100 periods of CPU time went by
  std::thread([&] { t.set_period(500'000); }).join();  // 2 kHz, as a server's request asks
  CHECK(t.period_ns() == 500'000);
  burn_cpu(0.1);
  const std::uint64_t at_rate = g_ticks.load();
  std::thread([&] { t.set_period(0); }).join();
  const std::uint64_t when_paused = g_ticks.load();
  burn_cpu(0.1);
  const std::uint64_t after = g_ticks.load();
  t.set_period(1'000'000);
  g_ticks += t.stop();  // a rate given just before the end: no more than its ticks so far
  INFO("ticks at 2 kHz for 0.1 s: " << at_rate << "; after the pause: " << after - when_paused);
  CHECK(at_rate >= 120);  // 200 expected; a loaded machine delays, never drops, whole periods
  CHECK(after - when_paused <= 2);  // a signal in flight at the pause
  t.set_period(1'000'000);  // a stopped timer ignores it
  CHECK(t.period_ns() == 0);
}
