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
  void trigger() const {
    if (handler_) handler_(SIGPROF);
  }
  // Stops LuaJIT's profiler (its traces are flushed) and leaves SIGPROF's handler as it is now.
  void stop(lua_State* L);
  bool running() const { return handler_ != nullptr; }

 private:
  void (*handler_)(int) = nullptr;  // LuaJIT's SIGPROF handler while its profiler runs
};

}  // namespace scriptprof::luajit
