// Call counting shares LuaJIT's one hook with the program: one part of the LuaJIT adapter, with
// its own state (normal context: the VM's hook, and the debug library's stand-ins).
//
// LuaJIT keeps a single hook per VM, not one per coroutine as Lua 5.4 does: counting puts its
// call hook there, and a program's debug.sethook would replace it (the counts would stop without
// a word) and at the run's end lose its own hook when ours is removed. So while calls are
// counted, the VM's hook runs both: ours on call events, then the program's (LuaJIT's hookf,
// which calls the Lua function that debug.sethook stored) on the events the program asked for.
// debug.sethook and debug.gethook are wrapped to keep the program's hook, mask and count beside
// ours, and to answer with them; at stop the program's hook is put back as it left it. Without
// counting, debug.sethook is wrapped only to mark the change of the VM's hook (HookWriteScope).
#pragma once
extern "C" {
#include <lua.h>
}

#include <sched.h>

#include <atomic>

#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::luajit {

// The bit of the HookWriteScope count that the timer's thread holds while it triggers LuaJIT
// for a blocked thread (LuaJitTickArm::arm_blocked).
constexpr int kOutsideTrigger = 1 << 30;

// Brackets a change of the VM's hook (lua_sethook: the program's debug.sethook, or ours while a
// run samples): no trigger lands in it. LuaJIT's trigger runs lj_dispatch_update, and one that
// interrupts the same function under lua_sethook can leave the dispatch table without any hook
// while the hook mask says profiling: the program's hooks and the samples then stop until the
// profiler does (LuaJIT's own jit.profile shows it too). Nesting is allowed. A trigger from the
// timer's thread takes the count from 0 to kOutsideTrigger, so none starts inside a change, and
// a change that begins during one waits for it (the trigger is a few hundred nanoseconds).
class HookWriteScope {
 public:
  explicit HookWriteScope(std::atomic<int>& writes) : writes_(writes) {
    if (writes_.fetch_add(1, std::memory_order_seq_cst) & kOutsideTrigger)
      while (writes_.load(std::memory_order_seq_cst) & kOutsideTrigger) sched_yield();
  }
  ~HookWriteScope() { writes_.fetch_sub(1, std::memory_order_acq_rel); }
  HookWriteScope(const HookWriteScope&) = delete;
  HookWriteScope& operator=(const HookWriteScope&) = delete;

 private:
  std::atomic<int>& writes_;
};

class LuaJitHookSharing {
 public:
  // Lifts are told in `engine`'s profile health; hook changes are marked on `hook_writes`.
  LuaJitHookSharing(SamplerEngine& engine, std::atomic<int>& hook_writes) : engine_(engine), hook_writes_(hook_writes) {}

  // A counting run starts (on) or ends on L: the shared hook and the debug library's stand-ins.
  void share(lua_State* L, bool on);
  // A run without counting: debug.sethook marked as a hook write (on), or LuaJIT's back.
  void guard_sethook(lua_State* L, bool on);

  // From the shared hook, at a call: near the stack limit (LuaJIT makes room for 1 + LUA_MINSTACK
  // slots before any hook) counting steps aside, said in the profile's health, until a sample
  // finds the stack shallow again (relift_if_shallow). True when it stepped aside.
  bool lift_if_deep(lua_State* L, const lua_Debug* ar);
  void relift_if_shallow(lua_State* L);
  // The program's own hook gets the events it asked for.
  void pass_to_program(lua_State* L, lua_Debug* ar) const;

  // The debug library's stand-ins: after its debug.sethook, the program's hook is kept beside
  // ours; its debug.gethook results are replaced by the program's hook, mask and count.
  void program_set(lua_State* L);
  void answer_program(lua_State* L);

 private:
  void install(lua_State* L);  // the VM's hook: shared, or the program's while lifted
  // Stack slots above which counting steps aside: LuaJIT's stack holds LUAI_MAXSTACK slots, a
  // frame up to 250, and a hook call needs 1 + LUA_MINSTACK more.
  static constexpr int kLiftDepth = LUAI_MAXSTACK - 300;

  SamplerEngine& engine_;
  std::atomic<int>& hook_writes_;
  lua_Hook program_hook_ = nullptr;  // the program's hook while counting shares the VM's
  int program_mask_ = 0, program_count_ = 0;
  bool lifted_ = false;              // counting stepped aside near the stack limit
};

}  // namespace scriptprof::luajit
