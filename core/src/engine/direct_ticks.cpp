#include "direct_ticks.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace scriptprof {

namespace {

constexpr std::uint64_t kKernelFloorNs = 10'000;  // perf's shortest hrtimer period

int open_event(pid_t tid, std::uint64_t token) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = 1'000'000;  // replaced by each next_in() and turn_on()
  attr.sample_type = 0;            // no record is read: the signal is the message
  attr.disabled = 1;
  attr.exclude_hv = 1;  // kernel time counts: a tick due in a system call is sent at its return
  attr.sigtrap = 1;
  attr.remove_on_exec = 1;  // the kernel asks it of sigtrap events
  attr.sig_data = token;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

// Valgrind runs its client with its preload library: there a system call in every signal
// handler was misreported by memcheck as writes below the stack.
bool under_valgrind() {
  const char* preload = std::getenv("LD_PRELOAD");
  return preload && std::strstr(preload, "vgpreload") != nullptr;
}

// A debugger (or strace) attached now: every tick would stop the program in it.
bool traced() {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* tracer = std::strstr(buf, "TracerPid:");
  return tracer && std::atoi(tracer + 10) != 0;
}

// Before 5.18 the kernel forced the SIGTRAP on a thread that blocks it, which could end it.
bool kernel_at_least_5_18(std::string* release) {
  utsname u;
  if (uname(&u) != 0) return false;
  *release = u.release;
  int major = 0, minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 18);
}

}  // namespace

#if defined(__SANITIZE_THREAD__)
#define SCRIPTPROF_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SCRIPTPROF_UNDER_TSAN 1
#endif
#endif

bool DirectTicks::usable(pid_t tid, std::string* why_not) {
  auto no = [why_not](std::string why) {
    if (why_not) *why_not = std::move(why);
    return false;
  };
#ifdef SCRIPTPROF_UNDER_TSAN
  // ThreadSanitizer runs the handler of a synchronous signal (SIGTRAP is one to it) at once,
  // even inside its own locks: the handler's first atomic then waited for itself.
  return no("ThreadSanitizer");
#endif
  // SCRIPTPROF_TASK_CLOCK=off (tests and users compare the two): the watcher polls.
  const char* wanted = std::getenv("SCRIPTPROF_TASK_CLOCK");
  if (wanted && std::strcmp(wanted, "kernel") != 0) return no(std::string("SCRIPTPROF_TASK_CLOCK=") + wanted);
  if (under_valgrind()) return no("under valgrind");
  if (traced()) return no("a tracer is attached");
  std::string release;
  if (!kernel_at_least_5_18(&release)) return no("kernel " + release + ": perf's SIGTRAP needs 5.18");
  const int fd = open_event(tid, 0);
  if (fd < 0) return no(std::string("perf_event_open: ") + std::strerror(errno));
  ::close(fd);
  return true;
}

bool DirectTicks::open(pid_t tid, std::uint64_t token, std::string* why_not) {
  close();
  fd_ = open_event(tid, token);
  if (fd_ < 0) {
    if (why_not) *why_not = std::string("perf_event_open: ") + std::strerror(errno);
    return false;
  }
  pid_ = getpid();
  return true;
}

void DirectTicks::close() {
  if (fd_ < 0) return;
  turn_off();
  ::close(fd_);
  fd_ = -1;
}

bool DirectTicks::ours() const { return fd_ >= 0 && getpid() == pid_; }

void DirectTicks::next_in(std::uint64_t cpu_ns) const {
  if (fd_ < 0) return;
  std::uint64_t period = cpu_ns < kKernelFloorNs ? kKernelFloorNs : cpu_ns;
  // On an event that runs, the kernel restarts its period from now.
  ioctl(fd_, PERF_EVENT_IOC_PERIOD, &period);  // async-signal-safe: one system call
}

void DirectTicks::turn_on(std::uint64_t cpu_ns) const {
  if (!ours()) return;
  next_in(cpu_ns);
  ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
}

void DirectTicks::turn_off() const {
  if (ours()) ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
}

}  // namespace scriptprof
