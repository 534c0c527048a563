#include "thread_observer.hpp"

#include "scriptprof/sampling_timer.hpp"  // clock_ns

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace scriptprof {

namespace {
// One of thread `tid`'s files in /proc, opened for reading; -1 where there is none.
int open_task_file(pid_t tid, const char* name) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/" + name;
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}
}  // namespace

void ThreadObserver::open(pid_t tid, clockid_t cpu_clock) {
  close();
  cpu_clock_ = cpu_clock;
  last_cpu_ = 0;
  quiet_checks_ = 0;
  stat_fd_ = open_task_file(tid, "stat");  // -1: the CPU clock alone decides
  syscall_fd_ = open_task_file(tid, "syscall");
  char buf[128];
  // Kernels without it, or that refuse it (it needs ptrace access): the clock's two reads.
  if (syscall_fd_ >= 0 && pread(syscall_fd_, buf, sizeof buf, 0) <= 0) {
    ::close(syscall_fd_);
    syscall_fd_ = -1;
  }
}

void ThreadObserver::close() {
  if (stat_fd_ >= 0) ::close(stat_fd_);
  stat_fd_ = -1;
  if (syscall_fd_ >= 0) ::close(syscall_fd_);
  syscall_fd_ = -1;
}

// The file says "running" while the task's state is TASK_RUNNING (for another thread the kernel
// reads nothing more then), and the system call it sleeps in otherwise. A thread entering a
// sleep sets its state before the slow part of the way out (nanosleep arms its timer, a few us
// in these virtual machines, its CPU clock moving all along): a clock that moves says nothing
// there, and a signal sent then cuts the sleep. A thread found marked asleep but not yet off
// its CPU is waited for by the kernel (microseconds; a scheduler tick if it was preempted in
// that state), or read as running if it woke meanwhile.
bool ThreadObserver::kernel_says_running() const {
  char buf[16];
  const ssize_t n = pread(syscall_fd_, buf, sizeof buf, 0);
  return n >= 7 && std::memcmp(buf, "running", 7) == 0;  // nothing read: the thread is gone
}

const char* ThreadObserver::read_stat(char* buf, std::size_t size) const {
  if (stat_fd_ < 0) return nullptr;
  const ssize_t n = pread(stat_fd_, buf, size - 1, 0);
  if (n <= 0) return nullptr;  // the thread is gone
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
  return paren && paren[1] == ' ' ? paren + 2 : nullptr;
}

// The CPU clock moving between two reads says the thread is on a CPU; /proc's state 'R' says
// it is on one or waiting for one. A clock still at the last call's reading says it was off the
// CPU all along: blocked, or (on a busy machine) waiting for a CPU, which /proc tells apart.
ThreadObserver::State ThreadObserver::state(bool look_closely, std::uint64_t cpu_now, bool moved_is_enough) {
  // The kernel's word alone, read last: the nearer the signal, the shorter the window in which
  // the thread can block. (Running or waiting for a CPU: either takes a signal at once.)
  if (look_closely && syscall_fd_ >= 0) return kernel_says_running() ? State::Running : State::Blocked;
  const std::uint64_t a = cpu_now ? cpu_now : clock_ns(cpu_clock_);
  const bool moved = a != last_cpu_;
  last_cpu_ = a;
  if (moved && (moved_is_enough || clock_ns(cpu_clock_) != a)) return State::Running;
  if (!moved && !look_closely && ++quiet_checks_ % 4 != 0) return State::Blocked;  // one read: cheap to poll
  if (stat_fd_ < 0) return moved ? State::Ready : State::Blocked;
  return stat_state() == 'R' ? State::Ready : State::Blocked;
}

char ThreadObserver::stat_state() const {
  char buf[512];
  const char* fields = read_stat(buf, sizeof buf);
  return fields ? fields[0] : '\0';
}

bool ThreadObserver::asleep() const {
  if (syscall_fd_ >= 0) return !kernel_says_running();
  const char state = stat_state();
  return state != '\0' && state != 'R';
}

int ThreadObserver::processor() const {
  char buf[512];
  const char* p = read_stat(buf, sizeof buf);
  // After the name come the state (field 3) and numbers; the CPU is field 39.
  for (int field = 3; p && *p; ++p) {
    if (*p != ' ') continue;
    if (++field == 39) return std::atoi(p + 1);
  }
  return -1;
}

}  // namespace scriptprof
