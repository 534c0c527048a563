// LuaJitTickArm (luajit_tick_arm.hpp).
#include "luajit_tick_arm.hpp"

#include "luajit_hook_sharing.hpp"

namespace scriptprof::luajit {

// Async-signal-safe: an atomic exchange and the bridge's trigger (LuaJIT's own SIGPROF handler,
// see jit_profiler_bridge.hpp). It triggers on every tick: a trigger that lands while LuaJIT
// runs a VM event sets no hook, and the next tick must be able to try again.
ArmResult LuaJitTickArm::arm(const ArmContext&) {
  // Inside the callback LuaJIT refuses a trigger (its hook mask holds HOOK_VMEVENT) and the
  // arm would be lost with armed_ set; inside a change of the VM's hook a trigger could break
  // the dispatch table (HookWrite): the ticks wait for the next tick instead.
  if (in_profiler_.load(std::memory_order_acquire) || hook_writes_.load(std::memory_order_acquire))
    return ArmResult::NotNow;
  const bool was = armed_.exchange(true, std::memory_order_relaxed);
  bridge_.trigger();
  return was ? ArmResult::AlreadyArmed : ArmResult::Armed;
}

// The timer's thread, the VM's thread found blocked in the kernel (a sleep, a read) just now:
// the trigger rewrites the VM's hook mask and dispatch table as the signal would, and the first
// instruction after the wake takes the sample, in the stack that blocked. From another thread
// it must not meet a write of those fields by the VM (LuaJIT's SIGPROF builds take no lock,
// where its timer-thread builds lock hook_enter/hook_leave), so it is made only when none can
// come: no hook of the program's (its entries and exits write the mask), no counting (whose
// hook is shared), not inside the profiler's callback, and not inside a change of the hook; a
// change that begins meanwhile (debug.sethook is wrapped: HookWriteScope) waits for it. What
// is left is a thread that wakes in the microseconds between the kernel's word and the
// trigger and at once changes the hook from C (lua_sethook, luaJIT_setmode) or runs a
// finalizer: no Lua code runs that soon after a wake.
ArmResult LuaJitTickArm::arm_blocked(const ArmContext&) {
  if (counting_ || in_profiler_.load(std::memory_order_acquire)) return ArmResult::NotNow;
  if (armed_.load(std::memory_order_acquire)) return ArmResult::AlreadyArmed;
  int none = 0;
  if (!hook_writes_.compare_exchange_strong(none, kOutsideTrigger, std::memory_order_seq_cst)) return ArmResult::NotNow;
  ArmResult result = ArmResult::NotNow;
  if (lua_gethook(main_) == nullptr && lua_gethookmask(main_) == 0) {  // the VM's hook: one for all its threads
    armed_.store(true, std::memory_order_relaxed);
    bridge_.trigger();
    result = ArmResult::Armed;
  }
  hook_writes_.fetch_sub(kOutsideTrigger, std::memory_order_seq_cst);
  return result;
}

}  // namespace scriptprof::luajit
