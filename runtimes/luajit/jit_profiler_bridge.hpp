// LuaJIT's own profiler as the adapter's safe point, driven by the engine's timer.
//
// A hook set with lua_sethook never fires inside compiled traces, so a hook-armed sample sees
// only interpreted code. LuaJIT's profiler (luaJIT_profile_start in 'f' or 'l' mode) makes the
// JIT emit checks at function or line boundaries, and its SIGPROF handler sets a VM hook that
// calls back at the next one, with the VM state (compiled, interpreted, C, GC, JIT compiler).
// Its timer, though, is an ITIMER_PROF that the kernel tick caps near 250 signals/s here. The
// bridge keeps LuaJIT's machinery and replaces its timer: it starts the profiler, stops its
// ITIMER_PROF, puts the SIGPROF handler that was there back, and keeps LuaJIT's handler to call
// from the engine's tick (trigger()).
#pragma once
extern "C" {
#include <luajit.h>
}
#include <signal.h>

#include <atomic>
#include <string>

namespace scriptprof::luajit {

class JitProfilerBridge {
 public:
  // Starts LuaJIT's profiler on L's VM in `mode` ('f': safe points at function boundaries, 'l':
  // also at line boundaries). False with a reason when another profiler holds SIGPROF's
  // interval timer (jit.profile, luajit -jp, gprof) or another VM holds LuaJIT's profiler.
  bool start(lua_State* L, char mode, luaJIT_profile_callback callback, void* data, std::string* error);
  // Signal context: asks for a callback at the VM's next safe point. Async-signal-safe: it calls
  // LuaJIT's own SIGPROF handler, which only sets fields of the VM's global state (a counter,
  // the VM state, the hook mask and the dispatch table), as it does under LuaJIT's own timer.
  // From another thread it races the VM's own writes of those fields: only while the VM's thread
  // is blocked, with no such write able to start (LuaJitTickArm::arm_blocked).
  // Nothing once LuaJIT stopped its profiler behind the bridge's back (see stopped_elsewhere()).
  void trigger() const {
    if (!handler_ || lost_.load(std::memory_order_relaxed)) return;
    if (stopped_elsewhere()) {
      lost_.store(true, std::memory_order_relaxed);
      return;
    }
    handler_(SIGPROF);
  }
  // Stops LuaJIT's profiler (its traces are flushed) and leaves SIGPROF's handler as it is now.
  void stop(lua_State* L);
  bool running() const { return handler_ != nullptr; }

 private:
  // LuaJIT's profiler can stop without the bridge: lua_close stops it before any finalizer
  // runs (the adapter's own stop among them), and so do jit.profile.stop() and another VM's
  // start. Its handler then dereferences the VM it no longer has. LuaJIT puts back, when it
  // stops, the SIGPROF action it found at its start; the bridge made that action carry a mark
  // (one more signal in its mask) and put the program's own back: the mark on SIGPROF now says
  // the profiler stopped. Async-signal-safe (sigaction), from the signal or the timer's thread.
  bool stopped_elsewhere() const {
    struct sigaction now;
    return sigaction(SIGPROF, nullptr, &now) == 0 && sigismember(&now.sa_mask, mark_) == 1;
  }
  void (*handler_)(int) = nullptr;  // LuaJIT's SIGPROF handler while its profiler runs
  int mark_ = 0;                    // the signal added to the marked action's mask
  mutable std::atomic<bool> lost_{false};  // stopped_elsewhere() was seen: never trigger again
};

}  // namespace scriptprof::luajit
