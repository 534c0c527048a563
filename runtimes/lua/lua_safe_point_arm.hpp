// Arming a Lua state's next safe point: one part of the Lua adapter, with its own state. The
// engine's tick (a signal handler on the state's thread, or the timer's thread while that
// thread is blocked) arms a hook with lua_sethook, which the Lua manual names as safe to call
// from a signal handler; at the next instruction, call or return the hook takes the sample and
// disarms, putting back the hook the state had. What moves an arm takes an ArmContext (the tick's,
// or an ArmMove's: sampler_engine.hpp). Every method here is async-signal-safe unless it says
// otherwise: lock-free atomics, plain fields written before `armed_` is published,
// lua_gethook/lua_gethookmask/lua_gethookcount/lua_sethook, and reads of the interrupted
// thread's own state (lua_state_layout.hpp), which cannot change while the handler runs there.
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <atomic>
#include <cstdint>

#include "lua_hook_sharing.hpp"
#include "lua_state_layout.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::lua {

class LuaSafePointArm final : public TickArm {
 public:
  // Safe-point work the signal handler could not finish: the C function a tick found running.
  struct PendingCFrame {
    const void* fn = nullptr;  // lua_CFunction, or null: none
    const void* ci = nullptr;  // its CallInfo
  };

  // `running`: the state running Lua code now; `counting` (the sampler's: the run counts calls,
  // our hook is on every thread) changes what an arm borrows; `in_profiler`: the profiler's own
  // work, where no blocked arm lands. It holds no engine: a tick reaches it only through the
  // ArmContext it is given.
  // `armed_block`: where the allocator tap looks for the armed thread's free (the tap's).
  LuaSafePointArm(const std::atomic<lua_State*>& running, const bool& counting, const std::atomic<bool>& in_profiler,
                  std::atomic<std::uintptr_t>& armed_block)
      : running_(running), counting_(counting), in_profiler_(in_profiler), armed_block_(armed_block) {}

  // Normal context, before the timer can tick: nothing armed or pending; `in_place`: this Lua
  // grows stacks with realloc in place (5.4.0-5.4.2), which the allocator tells us of.
  void clear(bool in_place) {
    stacks_move_in_place_ = in_place;
    clear();
  }
  void clear() {
    publish(nullptr);
    pending_c_ = {};
    last_restored_ = {};
  }
  // The armed thread was freed (a coroutine collected while it waited for its safe point): the
  // arm is forgotten without a write to it. Normal context, inside the engine's critical section.
  void forget_freed() {
    publish(nullptr);
    pending_c_ = {};
    blocked_arm_ = false;
  }

  // TickArm: the tick arms the running state; from the timer's thread, the running state while
  // its thread is blocked in the kernel; disarm takes back an arm that has not fired.
  ArmResult arm(const ArmContext& context) override;
  ArmResult arm_blocked(const ArmContext& context) override;
  void disarm(const ArmContext& context) override { disarm(false, context); }
  // Arms L's next safe point; false when it did not (the tick, or an ArmMove).
  bool arm(lua_State* L, const ArmContext& context);
  // Puts back the hook the armed state had; `fired`: from the armed hook itself.
  void disarm(bool fired, const ArmContext& context);

  // The state armed for a sample, or null; the atomic itself for the counting hook's inline test.
  lua_State* armed() const { return armed_.load(std::memory_order_acquire); }
  const std::atomic<lua_State*>& armed_state() const { return armed_; }
  // The armed state's own hook, restored after the sample, and whether the arm rides on that
  // hook's own events (borrowed) rather than a count of ours.
  const HostHook& saved() const { return saved_; }
  // The hook the last disarm put back (a thread made while it was armed copied ours instead).
  const HostHook& last_restored() const { return last_restored_; }
  bool borrowed() const { return borrowed_; }
  // The C function a tick found running, taken by the sample (normal context).
  PendingCFrame take_pending_c() {
    PendingCFrame c = pending_c_;
    pending_c_ = {};
    return c;
  }
  // How many arms have set our hook so far: one that comes between two readings may have read
  // hook fields the program was halfway through writing.
  std::uint32_t arms_so_far() const { return arms_.load(std::memory_order_acquire); }

  // From the allocator wrapper around every reallocation of an existing block: whether it is
  // the running state's stack, moved in place (Lua 5.4.0-5.4.2), whose frames the signal
  // handler must then not read until Lua has put its pointers right.
  bool stack_move_begins(const void* block, lua_State* running) {
    if (!stacks_move_in_place_) return false;  // 5.4.3 on: a new block, the old freed last
    if (!running || block != stack_block(running)) return false;
    moving_stack_.store(kStackInRealloc, std::memory_order_release);
    return true;
  }
  // Addresses as numbers: the old block may be freed, and only its address is kept.
  void stack_move_ends(std::uintptr_t old_block, std::uintptr_t new_block) {
    // Moved elsewhere: unsettled while the state still points at the old block.
    moving_stack_.store(new_block == old_block ? 0 : old_block, std::memory_order_release);
  }
  // Whether `block` is the stack of the state armed for a sample, which Lua grows for the hook
  // it is about to call (LUA_MINSTACK slots): the growth is the profiler's.
  bool armed_stack(const void* block) const {
    lua_State* armed = armed_.load(std::memory_order_relaxed);
    return armed && block == stack_block(armed);
  }
  // From the allocator wrapper (normal context, inside the caller's ArmMove): a block as big as
  // a stack near LUAI_MAXSTACK. If it is the armed state's stack growing, a hook could now fail
  // for want of slots: the arm is taken back and its ticks dropped.
  void stack_block_grew(const void* old_block, const ArmContext& context);

  // After the sample: lua_sethook restarted the program's instruction count; puts back what was
  // left of it. True when the program's own count event falls on this instruction.
  static bool restore_countdown(lua_State* L, const HostHook& host, int event);

 private:
  bool still_armed(lua_State* L) const;  // waiting for its safe point
  // Sets armed_, the tap's view of its block first: a thread armed is a block watched.
  void publish(lua_State* L);
  bool stack_settled(lua_State* L);      // no stack move under way
  void note_c_frame(lua_State* L);

  const std::atomic<lua_State*>& running_;
  const bool& counting_;
  const std::atomic<bool>& in_profiler_;
  std::atomic<std::uintptr_t>& armed_block_;
  // Whether the last tick's running state was the one told (no coroutine found on top of it):
  // the timer's thread arms only that one (arm_blocked), never reading frames.
  std::atomic<bool> told_runs_{true};
  std::atomic<lua_State*> armed_{nullptr};  // state whose hook we replaced, or null
  HostHook saved_;                          // armed_'s own hook, restored after the sample
  HostHook last_restored_;                  // saved_ as the last disarm restored it
  bool borrowed_ = false;                   // armed on the program's own hook's events
  bool blocked_arm_ = false;                // armed from the timer's thread (arm_blocked)
  std::atomic<std::uint32_t> arms_{0};      // arms that set our hook (arms_so_far)
  // A stack being moved (stack_move_begins): kStackInRealloc while the allocator runs, then
  // the old block while the state's own pointer is still that block (Lua sets it last, after
  // correcting the rest); null otherwise.
  static constexpr std::uintptr_t kStackInRealloc = 1;  // no block's address
  std::atomic<std::uintptr_t> moving_stack_{0};
  bool stacks_move_in_place_ = false;  // read at start
  PendingCFrame pending_c_;            // written before armed_ is published
};

}  // namespace scriptprof::lua
