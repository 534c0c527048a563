// The program's own signals while the timer runs. Each test case runs in a fresh process (ctest
// runs one case per process), so the program's SIGPROF handler can be there before ours, as in a
// host that had one first.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "scriptprof/sampling_timer.hpp"

using namespace scriptprof;

namespace {

std::atomic<int> g_host_sigprof{0};
std::atomic<int> g_host_sigalrm{0};
std::atomic<std::uint64_t> g_ticks{0};
// Async-signal-safe: lock-free atomics only.
void host_sigprof(int) { ++g_host_sigprof; }
void host_sigalrm(int) { ++g_host_sigalrm; }
void count_ticks(void*, std::uint64_t ticks, std::uint64_t) { g_ticks += ticks; }

TimerSettings wall(std::uint64_t hz) {
  TimerSettings s;
  s.clock = TimerClock::Wall;
  s.period_ns = 1'000'000'000u / hz;
  return s;
}

// Sleeps `seconds` however often signals cut the sleeps short (nanosleep is never restarted).
void sleep_through_signals(double seconds) {
  timespec now, end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  auto ns = static_cast<long long>(seconds * 1e9) + end.tv_nsec;
  end.tv_sec += static_cast<time_t>(ns / 1000000000);
  end.tv_nsec = static_cast<long>(ns % 1000000000);
  do {
    usleep(1000);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
}

}  // namespace

TEST_CASE("a SIGPROF handler the program had first still gets its own signals - and none of ours") {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = host_sigprof;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGPROF, &sa, nullptr) == 0);
  SamplingTimer timer;
  std::string error;
  // At 100 Hz: a standard signal does not queue, so a SIGPROF raised while one of our ticks is
  // still pending merges into it (the handler then sees only our tick); at 10 kHz that happened
  // in about 1 run in 20. Ticks are whole periods of elapsed time: 0.1 s holds 9 or 10.
  REQUIRE(timer.start(wall(100), count_ticks, nullptr, &error));
  for (int i = 0; i < 5; ++i) {
    raise(SIGPROF);
    sleep_through_signals(0.02);
  }
  timer.stop();
  CHECK(g_host_sigprof == 5);
  CHECK(g_ticks >= 8);  // ours kept coming meanwhile
}

TEST_CASE("blocking reads and sleeps interrupted by the timer restart - no EINTR reaches the program") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  SamplingTimer timer;
  std::string error;
  REQUIRE(timer.start(wall(10000), count_ticks, nullptr, &error));
  std::thread writer([&] {
    usleep(100000);
    REQUIRE(write(fds[1], "hello", 5) == 5);
  });
  char buf[8] = {};
  ssize_t got = read(fds[0], buf, sizeof buf);  // blocks ~100 ms: about a thousand ticks
  int read_errno = errno;
  writer.join();
  timer.stop();
  CHECK(got == 5);
  CHECK((got == 5 || read_errno != EINTR));
  CHECK(std::string(buf, 5) == "hello");
  CHECK(g_ticks > 100);
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE("the program's own interval timer and SIGALRM handler work unchanged beside ours") {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = host_sigalrm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  REQUIRE(sigaction(SIGALRM, &sa, nullptr) == 0);
  SamplingTimer timer;
  std::string error;
  REQUIRE(timer.start(wall(10000), count_ticks, nullptr, &error));
  itimerval it{{0, 10000}, {0, 10000}};  // every 10 ms
  REQUIRE(setitimer(ITIMER_REAL, &it, nullptr) == 0);
  sleep_through_signals(1.0);
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  timer.stop();
  // 100 SIGALRMs are due; a loaded machine may merge a few, but ours never replace them.
  CHECK(g_host_sigalrm >= 50);
  CHECK(g_host_sigalrm <= 101);
  CHECK(g_ticks > 1000);
}
