#include "jit_profiler_bridge.hpp"

#include <pthread.h>
#include <sys/time.h>

#include <cstring>

namespace scriptprof::luajit {

namespace {

bool itimer_prof_running() {
  itimerval t{};
  getitimer(ITIMER_PROF, &t);
  return t.it_value.tv_sec || t.it_value.tv_usec || t.it_interval.tv_sec || t.it_interval.tv_usec;
}

void stop_itimer_prof() {
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
}

// SIGPROF is blocked on this thread while handlers are swapped, so that no signal meets the
// interval between two sigaction calls (a SIGPROF under SIG_DFL ends the process); one that
// arrives meanwhile is delivered at the unblock, to the handler meant to have it.
struct SigprofBlocked {
  sigset_t old;
  SigprofBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &set, &old);
  }
  ~SigprofBlocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

}  // namespace

bool JitProfilerBridge::start(lua_State* L, char mode, luaJIT_profile_callback callback, void* data,
                              std::string* error) {
  if (handler_) return true;
  if (itimer_prof_running()) {
    // LuaJIT would stop a profiler its program started (jit.profile, -jp) to start ours: the
    // program's profiler would be left half-on. Another ITIMER_PROF user would lose its timer.
    *error = "another profiler is running (jit.profile, luajit -jp, or an ITIMER_PROF timer): stop it first";
    return false;
  }
  SigprofBlocked blocked;
  struct sigaction ours, theirs;
  sigaction(SIGPROF, nullptr, &ours);
  // The marked action LuaJIT saves and puts back when it stops (see stopped_elsewhere()): the
  // program's, with a real-time signal its mask lacks added.
  mark_ = SIGRTMAX;
  while (mark_ > SIGRTMIN && sigismember(&ours.sa_mask, mark_) == 1) --mark_;
  struct sigaction marked = ours;
  sigaddset(&marked.sa_mask, mark_);
  sigaction(SIGPROF, &marked, nullptr);
  lost_ = false;
  // A long interval: the ITIMER_PROF it arms is stopped at once below.
  const char m[] = {mode, 'i', '9', '9', '9', '9', '9', '\0'};
  luaJIT_profile_start(L, m, callback, data);
  stop_itimer_prof();
  sigaction(SIGPROF, &ours, &theirs);
  if ((theirs.sa_flags & SA_SIGINFO) || theirs.sa_handler == SIG_DFL || theirs.sa_handler == SIG_IGN ||
      (!(ours.sa_flags & SA_SIGINFO) && theirs.sa_handler == ours.sa_handler)) {
    // LuaJIT installed nothing: its profiler belongs to another VM of this process.
    *error = "LuaJIT's profiler is in use by another Lua state of this process (one per process)";
    return false;
  }
  handler_ = theirs.sa_handler;
  return true;
}

void JitProfilerBridge::stop(lua_State* L) {
  if (!handler_) return;
  SigprofBlocked blocked;
  struct sigaction now;
  sigaction(SIGPROF, nullptr, &now);
  // LuaJIT puts back the handler it found at its start; the one installed now is the right one,
  // without the mark if LuaJIT put it back already (it stopped first: then this stop is a no-op).
  luaJIT_profile_stop(L);
  if (sigismember(&now.sa_mask, mark_) == 1) sigdelset(&now.sa_mask, mark_);
  sigaction(SIGPROF, &now, nullptr);
  handler_ = nullptr;
}

}  // namespace scriptprof::luajit
