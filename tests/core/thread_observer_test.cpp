// The watcher's view of the profiled thread (core/src/engine/thread_observer.hpp): before a
// signal it must call a thread that is entering a sleep blocked, though its CPU clock moved
// since the last look (a signal then would cut the sleep short).
#include <catch2/catch.hpp>
#include "thread_observer.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

using scriptprof::ThreadObserver;

namespace {

// A thread that spins until told to sleep, then sleeps until told to end.
struct Subject {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> sleep{false}, end{false};
  std::atomic<int> naps{0};  // sleeps begun
  std::thread thread{[this] {
    tid = gettid();
    volatile unsigned long sink = 0;
    while (!sleep) sink = sink + 1;
    while (!end) {
      ++naps;
      usleep(1000);
    }
  }};
  clockid_t clock() {
    clockid_t id;
    REQUIRE(pthread_getcpuclockid(thread.native_handle(), &id) == 0);
    return id;
  }
  ~Subject() {
    sleep = end = true;
    thread.join();
  }
};

// Told to sleep, the subject is asleep but for its wake-ups each millisecond; on a busy machine
// (a sanitizer's build beside other tests) it may wait for a CPU after a wake-up, runnable, for
// longer than a batch of looks (0 of 20 once). The best of ten batches, 20 ms apart, each after
// the subject began another sleep: a look that calls a sleeper running fails all ten.
template <class Look>
int most_blocked(Subject& subject, Look look) {
  int best = 0;
  for (int batch = 0; batch < 10 && best < 18; ++batch) {
    const int naps = subject.naps.load();
    for (int wait = 0; wait < 5000 && subject.naps.load() == naps; ++wait) usleep(1000);
    usleep(200);  // into the sleep it began
    int blocked = 0;
    for (int i = 0; i < 20; ++i) blocked += look();
    best = std::max(best, blocked);
    if (best < 18) usleep(20'000);
  }
  return best;
}

}  // namespace

TEST_CASE("the watcher's close look sees a running thread run and a sleeping one blocked", "[timer]") {
  Subject subject;
  while (!subject.tid) std::this_thread::yield();
  ThreadObserver observer;
  observer.open(subject.tid, subject.clock());
  CHECK(observer.state(true) != ThreadObserver::State::Blocked);
  subject.sleep = true;
  const int blocked = most_blocked(subject, [&] { return observer.state(true) == ThreadObserver::State::Blocked; });
  CHECK(blocked >= 18);
}

TEST_CASE("the watcher's close look calls a sleeping thread blocked though its clock moved since the last look", "[timer]") {
  // Entering a sleep, a thread's clock runs until it leaves the CPU (nanosleep arms its timer
  // first): a close look then must go by the kernel's task state, not by the clock. Told that
  // the clock read just now differs from the last look's, the look sees what it sees then.
  Subject subject;
  while (!subject.tid) std::this_thread::yield();
  ThreadObserver observer;
  observer.open(subject.tid, subject.clock());
  subject.sleep = true;
  usleep(20'000);
  if (access(("/proc/self/task/" + std::to_string(subject.tid.load()) + "/syscall").c_str(), R_OK) != 0) {
    WARN("no /proc/self/task/TID/syscall here: the close look goes by the CPU clock alone");
    return;
  }
  const int blocked = most_blocked(subject, [&] {
    const std::uint64_t moved = observer.cpu_at_last_look() + 1;  // a clock that moved since
    return observer.state(true, moved) == ThreadObserver::State::Blocked;
  });
  CHECK(blocked >= 18);  // a few may meet the usleep's wake-ups
}
