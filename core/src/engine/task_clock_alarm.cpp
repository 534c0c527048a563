#include "task_clock_alarm.hpp"

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace scriptprof {

namespace {

int open_task_clock(pid_t tid, bool user_only) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = 1'000'000;  // replaced by each arm()
  attr.sample_type = 0;            // a record says only that the period ended
  attr.disabled = 1;
  attr.wakeup_events = 1;          // each record wakes poll()
  attr.exclude_kernel = user_only ? 1 : 0;
  attr.exclude_hv = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

bool TaskClockAlarm::open(pid_t tid, std::string* why_not) {
  close();
  // Kernel time counts too where allowed: an expiry in a system call then rings on time.
  user_only_ = false;
  event_fd_ = open_task_clock(tid, false);
  if (event_fd_ < 0 && (errno == EACCES || errno == EPERM)) {
    user_only_ = true;
    event_fd_ = open_task_clock(tid, true);
  }
  if (event_fd_ < 0) {
    if (why_not) *why_not = std::string("perf_event_open: ") + std::strerror(errno);
    return false;
  }
  const long page = sysconf(_SC_PAGESIZE);
  ring_size_ = static_cast<std::size_t>(page > 0 ? page : 4096) * 2;  // the header page and one data page
  ring_ = mmap(nullptr, ring_size_, PROT_READ | PROT_WRITE, MAP_SHARED, event_fd_, 0);
  if (ring_ == MAP_FAILED) {
    ring_ = nullptr;
    if (why_not) *why_not = std::string("mmap of the perf ring: ") + std::strerror(errno);
    close();
    return false;
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    if (why_not) *why_not = std::string("eventfd: ") + std::strerror(errno);
    close();
    return false;
  }
  return true;
}

void TaskClockAlarm::close_event() {
  if (ring_) munmap(ring_, ring_size_);
  ring_ = nullptr;
  if (event_fd_ >= 0) ::close(event_fd_);
  event_fd_ = -1;
  refreshed_ = false;
}

void TaskClockAlarm::close() {
  close_event();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

void TaskClockAlarm::arm(std::uint64_t cpu_ns) {
  if (event_fd_ < 0) return;
  std::uint64_t period = cpu_ns < 10'000 ? 10'000 : cpu_ns;
  // A new period, counted afresh from now. A refresh lets the event ring that many more times,
  // then turn itself off with no call from here; the kernel adds it to what is left, so a second
  // refresh before a ring would leave the event ringing each period from then on (early rings,
  // read by the timer as early checks): one refresh stands until its ring is seen.
  ioctl(event_fd_, PERF_EVENT_IOC_PERIOD, &period);
  if (!refreshed_) refreshed_ = ioctl(event_fd_, PERF_EVENT_IOC_REFRESH, 1) == 0;
}

void TaskClockAlarm::consume() {
  auto* page = static_cast<perf_event_mmap_page*>(ring_);
  const std::uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  __atomic_store_n(&page->data_tail, head, __ATOMIC_RELEASE);
}

bool TaskClockAlarm::wait(std::uint64_t timeout_ns) {
  if (wake_fd_ < 0) return false;
  // The wake-up descriptor first: with the event closed (its thread gone) poll() skips fd -1.
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {event_fd_, POLLIN, 0}};
  const timespec timeout = {static_cast<time_t>(timeout_ns / 1'000'000'000u),
                            static_cast<long>(timeout_ns % 1'000'000'000u)};
  const int n = ppoll(fds, 2, &timeout, nullptr);
  if (n <= 0) return false;
  if (fds[0].revents & POLLIN) {
    std::uint64_t count;
    while (read(wake_fd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count)) {
    }
  }
  if (fds[1].revents & POLLHUP) {  // the thread exited: the event would report it at every poll
    close_event();
    return false;
  }
  const bool rang = (fds[1].revents & POLLIN) != 0;
  // Rung: the refresh is spent and the event off. (A ring that came between a wait and an arm,
  // whose arm then only set the period, is seen by the next wait: the next arm refreshes.)
  if (rang) {
    consume();
    refreshed_ = false;
  }
  return rang;
}

void TaskClockAlarm::interrupt() {
  if (wake_fd_ < 0) return;
  const std::uint64_t one = 1;
  // A full counter (never, at one write per stop) would only mean a wake is already pending.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

}  // namespace scriptprof
