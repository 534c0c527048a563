// The task clock alarm (core/src/engine/task_clock_alarm.hpp) on the test's own thread: it
// rings by the thread's CPU time, and once per arm however often it was armed before the ring.
#include <catch2/catch.hpp>
#include "task_clock_alarm.hpp"

#include <ctime>
#include <unistd.h>

namespace {

std::uint64_t thread_cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
}

void spin_cpu(std::uint64_t ns) {
  const std::uint64_t start = thread_cpu_ns();
  volatile std::uint64_t sink = 0;
  while (thread_cpu_ns() - start < ns) sink = sink + 1;
}

// Opens the alarm on this thread, or says why the system refuses perf events (the timer then
// polls, and timer tests cover that).
bool open_here(scriptprof::TaskClockAlarm& alarm) {
  std::string why;
  if (alarm.open(gettid(), &why)) return true;
  WARN("no task clock alarm here: " << why);
  return false;
}

}  // namespace

TEST_CASE("a task clock alarm rings when its thread has run the time it was armed for", "[timer]") {
  scriptprof::TaskClockAlarm alarm;
  if (!open_here(alarm)) return;
  alarm.arm(20'000'000);
  spin_cpu(5'000'000);
  CHECK_FALSE(alarm.wait(0));  // a quarter of the way
  spin_cpu(25'000'000);
  CHECK(alarm.wait(0));
}

TEST_CASE("a task clock alarm armed again before its ring rings once, then stays off", "[timer]") {
  // The kernel adds each refresh to what is left: armed twice, an event ringing once per
  // refresh would ring every period from the second on, each an early wake of the watcher.
  scriptprof::TaskClockAlarm alarm;
  if (!open_here(alarm)) return;
  alarm.arm(1'000'000);
  alarm.arm(1'000'000);
  spin_cpu(1'500'000);
  CHECK(alarm.wait(0));
  spin_cpu(4'000'000);  // four more periods
  CHECK_FALSE(alarm.wait(0));
  alarm.arm(1'000'000);  // and it arms again after its ring
  spin_cpu(1'500'000);
  CHECK(alarm.wait(0));
}
