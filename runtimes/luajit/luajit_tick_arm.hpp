// The LuaJIT adapter's tick: one part of the adapter, with its own state. It asks LuaJIT's
// profiler for a callback at the VM's next safe point (JitProfilerBridge::trigger), from the
// timer's signal on the VM's thread or, while that thread is blocked, from the timer's thread.
// It holds no engine: a tick reaches the engine only through the ArmContext it is given.
#pragma once
extern "C" {
#include <lua.h>
}

#include <atomic>

#include "jit_profiler_bridge.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::luajit {

class LuaJitTickArm final : public TickArm {
 public:
  // `main`: a thread of the VM (its hook is the VM's); `in_profiler`: the profiler's own work,
  // where LuaJIT refuses a trigger; `hook_writes`: HookWriteScope's count of changes of the
  // VM's hook under way; `counting`: the run counts calls (the VM's hook is shared).
  LuaJitTickArm(lua_State* main, const JitProfilerBridge& bridge, const std::atomic<bool>& in_profiler,
                std::atomic<int>& hook_writes, const bool& counting)
      : main_(main), bridge_(bridge), in_profiler_(in_profiler), hook_writes_(hook_writes), counting_(counting) {}

  ArmResult arm(const ArmContext& context) override;          // the tick (signal context)
  ArmResult arm_blocked(const ArmContext& context) override;  // the timer's thread, the VM's blocked
  void disarm(const ArmContext&) override { armed_.store(false, std::memory_order_relaxed); }
  // Normal context, inside an ArmMove (an allocation sample is due): the next safe point samples.
  void arm_now(const ArmContext&) {
    armed_.store(true, std::memory_order_relaxed);
    bridge_.trigger();
  }
  // The safe point came (LuaJIT's callback): the next tick arms again.
  void fired() { armed_.store(false, std::memory_order_relaxed); }

 private:
  lua_State* const main_;
  const JitProfilerBridge& bridge_;
  const std::atomic<bool>& in_profiler_;
  std::atomic<int>& hook_writes_;
  const bool& counting_;
  std::atomic<bool> armed_{false};
};

}  // namespace scriptprof::luajit
