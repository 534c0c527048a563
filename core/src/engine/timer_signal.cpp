#include "timer_signal.hpp"

#include "scriptprof/sampling_timer.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace scriptprof {

namespace {

constexpr int kMaxTimers = 256;
constexpr std::uint64_t kTokenMagic = 0x5C9F;  // top 16 bits of every token
std::atomic<SamplingTimer*> g_timers[kMaxTimers];  // lock-free atomics: safe to read in a handler
std::atomic<std::uint64_t> g_tokens[kMaxTimers];   // the token each slot's timer sends now
std::uint32_t g_generation[kMaxTimers];            // under g_registry_mutex
struct sigaction g_previous[NSIG];                 // written before our handler is live on it
std::mutex g_registry_mutex;                       // serialises slots and installs (normal context)
std::atomic<int> g_in_handler{0};                  // handlers between registry look-up and return
std::atomic<pid_t> g_pid{0};                       // this process, as of the last claim (a fork's
                                                   // child claims anew before it signals)

void forward_to_previous(int sig, siginfo_t* info, void* uctx) {
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, uctx);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  }
  // A foreign signal under SIG_DFL would have ended the process; ignoring it is kinder.
}

// The token of a SIGTRAP a timer's perf event sent (si_code TRAP_PERF), or 0. Its si_perf_data
// follows the fault address in siginfo, where glibc's headers do not name it yet.
std::uint64_t perf_token(int sig, const siginfo_t* info) {
  constexpr int kTrapPerf = 6;  // TRAP_PERF, Linux 5.13
  if (sig != SIGTRAP || info->si_code != kTrapPerf) return 0;
  unsigned long data;
  std::memcpy(&data, reinterpret_cast<const char*>(&info->si_addr) + sizeof(void*), sizeof data);
  return data;
}

// The timer a token names, or null for a stale one (its timer stopped) or none of ours.
SamplingTimer* timer_of(std::uint64_t token) {
  if ((token >> 48) != kTokenMagic) return nullptr;
  const std::size_t slot = token & 0xFF;
  SamplingTimer* target = g_timers[slot].load(std::memory_order_acquire);
  return target && g_tokens[slot].load(std::memory_order_acquire) == token ? target : nullptr;
}

// Async-signal-safe: it reads lock-free atomics, calls SamplingTimer::on_signal
// (clock_gettime, atomics and the registered TickHandler, itself required to be
// async-signal-safe) or the previous handler, and saves/restores errno so the interrupted code
// never sees a change.
void timer_signal_handler(int sig, siginfo_t* info, void* uctx) {
  int saved_errno = errno;
  g_in_handler.fetch_add(1, std::memory_order_acq_rel);
  const auto token = info ? reinterpret_cast<std::uintptr_t>(info->si_value.sival_ptr) : 0;
  const std::uint64_t perf = info ? perf_token(sig, info) : 0;
  // A stale signal of a timer already stopped is ours by its token: swallowed.
  if (info && info->si_code == SI_QUEUE && info->si_pid == g_pid.load(std::memory_order_relaxed) &&
      (token >> 48) == kTokenMagic) {
    if (SamplingTimer* target = timer_of(token)) target->on_signal();
  } else if ((perf >> 48) == kTokenMagic) {
    if (SamplingTimer* target = timer_of(perf)) target->on_direct_signal();
  } else {
    forward_to_previous(sig, info, uctx);
  }
  g_in_handler.fetch_sub(1, std::memory_order_acq_rel);
  errno = saved_errno;
}

bool handler_is_ours(int sig);

// Installs the handler on `sig`, and leaves it for the life of the process: restoring SIG_DFL
// while a queued signal is still pending would end the process. A start after the program
// replaced it installs it again, forwarding to the program's. Under g_registry_mutex.
bool install_handler(int sig, std::string* error) {
  if (handler_is_ours(sig)) return true;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = timer_signal_handler;
  // SA_RESTART: system calls interrupted by a tick resume instead of failing with EINTR.
  // SA_ONSTACK: the handler runs on the thread's alternate stack (ensure_signal_stack).
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  struct sigaction previous;
  if (sigaction(sig, nullptr, &previous) != 0) {
    if (error) *error = "sigaction(" + timer_signal_name(sig) + "): " + std::strerror(errno);
    return false;
  }
  g_previous[sig] = previous;  // before the handler that reads it is live
  if (sigaction(sig, &sa, nullptr) != 0) {
    if (error) *error = "sigaction(" + timer_signal_name(sig) + "): " + std::strerror(errno);
    return false;
  }
  return true;
}

bool handler_is_ours(int sig) {
  struct sigaction now;
  return sigaction(sig, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == timer_signal_handler;
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

}  // namespace

bool TimerSignal::claim(int sig, SamplingTimer* timer, std::string* error) {
  release();
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  if (!install_handler(sig, error)) return false;
  for (int i = 0; i < kMaxTimers; ++i)
    if (!g_timers[i].load()) {
      slot_ = i;
      break;
    }
  if (slot_ < 0) {
    if (error) *error = "too many sampling timers running at once";
    return false;
  }
  sig_ = sig;
  token_ = kTokenMagic << 48 | static_cast<std::uint64_t>(++g_generation[slot_]) << 8 | static_cast<std::uint64_t>(slot_);
  claimed_by_ = gettid();
  pid_ = getpid();
  uid_ = getuid();
  g_pid.store(pid_, std::memory_order_relaxed);
  g_timers[slot_].store(timer, std::memory_order_release);
  g_tokens[slot_].store(token_, std::memory_order_release);
  ensure_signal_stack();
  return true;
}

void TimerSignal::release() {
  if (slot_ < 0) return;
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    g_tokens[slot_].store(0, std::memory_order_release);  // a signal still queued is now stale
    g_timers[slot_].store(nullptr, std::memory_order_release);
    slot_ = -1;
  }
  // A handler on another thread may have found the slot before it was cleared: wait it out.
  // (On the signalled thread itself no handler can be running here.)
  while (g_in_handler.load(std::memory_order_acquire) != 0 && gettid() != claimed_by_) sched_yield();
}

bool TimerSignal::handler_is_ours() const { return scriptprof::handler_is_ours(sig_); }

bool TimerSignal::send(pid_t tid) const {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  info.si_signo = sig_;
  info.si_code = SI_QUEUE;
  info.si_pid = pid_;
  info.si_uid = uid_;
  info.si_value.sival_ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(token_));
  return syscall(SYS_rt_tgsigqueueinfo, pid_, tid, sig_, &info) == 0;
}

int default_timer_signal() { return SIGRTMAX - 3; }

std::string timer_signal_name(int sig) {
  if (sig == SIGPROF) return "SIGPROF";
  if (sig == SIGUSR1) return "SIGUSR1";
  if (sig == SIGUSR2) return "SIGUSR2";
  if (sig == SIGALRM) return "SIGALRM";
  if (sig == SIGVTALRM) return "SIGVTALRM";
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return sig - SIGRTMIN <= SIGRTMAX - sig ? "SIGRTMIN+" + std::to_string(sig - SIGRTMIN)
                                            : "SIGRTMAX-" + std::to_string(SIGRTMAX - sig);
  return "signal " + std::to_string(sig);
}

int parse_timer_signal(const std::string& text, std::string* error) {
  int sig = 0;
  auto offset = [&](const char* prefix, int base, int direction) {
    const std::size_t n = std::strlen(prefix);
    if (text.compare(0, n, prefix) != 0) return false;
    if (text.size() == n) return sig = base, true;
    if (text[n] != (direction > 0 ? '+' : '-') || text.size() == n + 1) return false;
    for (std::size_t i = n + 1; i < text.size(); ++i)
      if (text[i] < '0' || text[i] > '9' || i > n + 3) return false;
    sig = base + direction * std::atoi(text.c_str() + n + 1);
    return true;
  };
  static const std::pair<const char*, int> kNamed[] = {
      {"SIGPROF", SIGPROF}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGALRM", SIGALRM}, {"SIGVTALRM", SIGVTALRM}};
  for (const auto& [name, number] : kNamed)
    if (text == name) sig = number;
  if (!sig && !offset("SIGRTMIN", SIGRTMIN, +1) && !offset("SIGRTMAX", SIGRTMAX, -1)) {
    bool digits = !text.empty() && text.size() < 4;
    for (char c : text) digits = digits && c >= '0' && c <= '9';
    if (digits) sig = std::atoi(text.c_str());
  }
  const bool allowed = sig == SIGPROF || sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGALRM || sig == SIGVTALRM ||
                       (sig >= SIGRTMIN && sig <= SIGRTMAX);
  if (!allowed) {
    if (error)
      *error = "'" + text + "' is not a signal the profiler can use: give SIGRTMIN+N, SIGRTMAX-N (N from 0 to " +
               std::to_string(SIGRTMAX - SIGRTMIN) + "), SIGPROF, SIGUSR1, SIGUSR2, SIGALRM or SIGVTALRM";
    return 0;
  }
  return sig;
}

}  // namespace scriptprof
