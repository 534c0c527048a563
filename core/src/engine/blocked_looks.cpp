#include "blocked_looks.hpp"

#include "task_clock_alarm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace scriptprof {

namespace {

// How often the watcher looks at a blocked thread. A look (a wake-up, a clock read, a sleep)
// costs 25-30 us of CPU on these virtual machines: at 1 ms, a thread blocked in a read costs
// about 3% of a core. The ticks due after a wake wait for the first look after it, so in the
// first milliseconds of a block, where a frame loop's sleeps end, looks come sooner.
constexpr std::uint64_t kBlockedPollNs = 1'000'000;
constexpr std::uint64_t kFirstBlockedPollNs = 200'000;
constexpr std::uint64_t kShortBlockNs = 2'000'000;

}  // namespace

BlockedLooks::BlockedLooks() = default;
BlockedLooks::~BlockedLooks() = default;

void BlockedLooks::begin(bool cpu_clock, pid_t tid) {
  missing_.clear();
  blocked_since_ns_ = 0;
  if (!cpu_clock) return;
  const char* wanted = std::getenv("SCRIPTPROF_TASK_CLOCK");
  if (wanted && std::strcmp(wanted, "off") == 0) {
    if (alarm_) alarm_->close();
    missing_ = "SCRIPTPROF_TASK_CLOCK=off";
    return;
  }
  if (!alarm_) alarm_ = std::make_unique<TaskClockAlarm>();
  if (!alarm_->open(tid, &missing_)) alarm_->close();
}

void BlockedLooks::end() {
  if (alarm_) alarm_->close();
}

void BlockedLooks::saw(bool runs, std::uint64_t look_ns) {
  last_look_ns_ = look_ns;
  if (runs) blocked_since_ns_ = 0;
  else if (!blocked_since_ns_) blocked_since_ns_ = look_ns;
}

// Looks at a blocked thread come often in the first milliseconds of a block, where the sleeps
// of a frame loop end (the ticks after its wake wait for the next look), and seldom after: a
// thread blocked in a read then costs a look a millisecond.
std::uint64_t BlockedLooks::pace() const {
  return blocked_since_ns_ && last_look_ns_ - blocked_since_ns_ >= kShortBlockNs ? kBlockedPollNs : kFirstBlockedPollNs;
}

bool BlockedLooks::rings() const { return alarm_ && alarm_->is_open(); }

// With the alarm, a blocked thread is still looked at once a millisecond, the looks' pace after
// 2 ms. With looks 100 ms apart, Lua 5.4's frame loop at 1 kHz gave its first function 1.0-2.7
// points too many (1 ms: -0.1 to +0.3; cause not found); and counting user time only, the alarm
// skips an expiry met in kernel code to the next period.
std::uint64_t BlockedLooks::arm(std::uint64_t cpu_ahead) {
  if (!rings()) return pace();
  alarm_->arm(cpu_ahead);
  return kBlockedPollNs;
}

void BlockedLooks::sleep(std::unique_lock<std::mutex>& lock, std::condition_variable& wake, std::uint64_t delay) {
  delay = std::max<std::uint64_t>(delay, 1000);
  if (!alarm_ || !alarm_->can_wait()) {
    wake.wait_for(lock, std::chrono::nanoseconds(delay));
    return;
  }
  lock.unlock();
  alarm_->wait(delay);
  lock.lock();
}

void BlockedLooks::interrupt() {
  if (alarm_) alarm_->interrupt();
}

std::string BlockedLooks::how(const std::string& carrier) const {
  if (alarm_ && missing_.empty())  // (closed again by end(): the run had it)
    return (alarm_->user_time_only() ? "task clock alarm (user time)" : "task clock alarm") + carrier;
  return "polled CPU clock" + carrier + (missing_.empty() ? std::string() : " (" + missing_ + ")");
}

}  // namespace scriptprof
