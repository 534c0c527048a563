// LuaSafePointArm (lua_safe_point_arm.hpp). Async-signal-safe throughout (see the header): it
// never allocates and never walks the stack (settraps inside lua_sethook only marks frames).
#include "lua_safe_point_arm.hpp"

#include "allocator_tap.hpp"
#include "lua_resume_chain.hpp"

namespace scriptprof::lua {

ArmResult LuaSafePointArm::arm(const ArmContext& context) {
  // The state told to run, or the coroutine it resumes (the switch is told to nobody).
  lua_State* told = running_.load(std::memory_order_acquire);
  lua_State* L = running_end(told);
  told_runs_.store(L == told, std::memory_order_relaxed);
  if (!L) return ArmResult::Elsewhere;
  if (!stack_settled(L)) return ArmResult::NotNow;  // its frames point into a freed block
  // No function runs on L: the host's own code, between its calls into Lua. Its time is the
  // host's, not the next Lua function's first instruction's. (After the check above: the
  // frame is read from the stack, which 5.4.0-5.4.2 move in place.)
  if (const RunningFrame f = running_frame(L); f.known && f.none) return ArmResult::Outside;
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (armed == L) {
    if (still_armed(L)) {
      // Still pending a whole tick later: a C function runs. It may have filled its stack since
      // the arm; if a hook could now fail for want of slots, the arm is taken back.
      if (!hook_has_room(L)) {
        disarm(false, context);
        context.drop_pending();
      } else if (!pending_c_.fn) {
        note_c_frame(L);
      }
      return ArmResult::AlreadyArmed;
    }
    // The program replaced our hook (debug.sethook): keep its hook as the one to restore.
  } else if (armed != nullptr) {
    // Armed on a coroutine that has switched out since (no switch is told) or on a resumer
    // before its coroutine set itself running: the ticks belong where the program runs now.
    // The other state is suspended on this thread: its hook fields are not being written.
    disarm(false, context);
  }
  return arm(L, context) ? ArmResult::Armed : ArmResult::NotNow;
}

// The timer's thread, while the running state's thread is asleep or blocked in the kernel (a
// sleep, a read, a C function waiting): the first return after it wakes (of the C function that
// blocked, most often) is the safe point, and its sample is the stack that blocked. Only what
// another thread may do: the state's own fields are read (no hook of the program's, none
// running, the stack far from its limit) and its hook fields written, never its frames. With a
// hook of the program's, under call counting or inside the profiler's own work, the ticks wait
// for a signal once it runs (NotNow). A thread that wakes in the microseconds between the
// kernel's word and the writes, and sets a hook, keeps its own: the writes lose (NotNow).
ArmResult LuaSafePointArm::arm_blocked(const ArmContext&) {
  // A coroutine found running at the last tick may have switched since: no frame is read from
  // here to know (the thread may wake meanwhile), so the ticks wait for a signal.
  lua_State* L = running_.load(std::memory_order_acquire);
  if (!L || counting_ || in_profiler_.load(std::memory_order_acquire) || !told_runs_.load(std::memory_order_relaxed))
    return ArmResult::NotNow;
  if (!stack_settled(L)) return ArmResult::NotNow;
  if (armed_.load(std::memory_order_acquire) != nullptr) return ArmResult::AlreadyArmed;
  if (!g_state_layout_verified.load(std::memory_order_acquire) || lua_gethook(L) != nullptr ||
      lua_gethookmask(L) != 0 || lua_status(L) != LUA_OK || hook_running(L) || !verified_stack_far_below_limit(L))
    return ArmResult::NotNow;
  saved_ = HostHook{};
  borrowed_ = false;
  blocked_arm_ = true;
  pending_c_ = {};
  publish(L);  // before the hook: it finds itself armed
  if (set_return_hook_from_outside(L, sampler_hook)) return ArmResult::Armed;
  blocked_arm_ = false;
  publish(nullptr);
  return ArmResult::NotNow;
}

// Signal context, or normal context inside the engine's critical section. Arms L's next safe point; false when it
// did not. Ticks wait (stay pending) while a hook runs or the program's count has just
// restarted; they are dropped and counted when a hook there could not get its stack slots.
bool LuaSafePointArm::arm(lua_State* L, const ArmContext& context) {
  // A hook is running (the program's): no hook can fire inside it, and the instructions it
  // runs would count against our count of 1 instead of the program's countdown. The ticks
  // wait for the next chance after it, which is where the sample would land anyway.
  // Likewise when the program's count has just restarted: its count hook may be about to be
  // called, and arming now would take that call and lose the program's event.
  const int* countdown = (lua_gethookmask(L) & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
  // The program's hook has line or count events, on its own or carried by our counting hook:
  // its events are borrowed (below).
  const bool borrowable = (lua_gethook(L) != sampler_hook || counting_) &&
                          (lua_gethookmask(L) & (LUA_MASKLINE | LUA_MASKCOUNT));
  // A running state whose status is not OK: Lua 5.4.0-5.4.4 run the __close handlers of a
  // coroutine being closed with its status still "yielded", and after a count or line hook Lua
  // takes that status for a yield by the hook and abandons the close. The ticks wait.
  if (lua_status(L) != LUA_OK) return false;
  if (hook_running(L) || (!borrowable && countdown && *countdown == lua_gethookcount(L))) return false;
  // A hook without events, or events without a hook: lua_sethook never leaves either, so the
  // tick came between its writes of the two (the program's debug.sethook, or the host's).
  // Saved now, that half would be restored after the sample in place of what it sets.
  if ((lua_gethook(L) == nullptr) != (lua_gethookmask(L) == 0)) return false;
  if (!hook_has_room(L)) {
    context.drop_pending();
    return false;
  }
  int mask = lua_gethookmask(L);
  // Re-arming over our own armed hook keeps the saved one: saving ours as the program's would
  // leave ours behind after the sample, and it removes itself as a stray.
  const bool rearm = still_armed(L);
  if (rearm && borrowed_) return true;  // the program's next event is the safe point already
  if (!rearm) {
    saved_ = hook_of(L);
    const int* left = (mask & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
    saved_.countdown = left ? *left : -1;
    note_c_frame(L);
  }
  // The program's own hook has line or count events: borrow its events rather than make ours.
  // Our hook takes its place with its mask and count, its countdown put back as it was, so the
  // next event it would have had (or a call) is the safe point and is passed on to it: it sees
  // every event as unprofiled (a count of ours, restarting, shifted its count events and Lua's
  // line tracking). Under call counting our hook already carries the program's: it stays. Call
  // and return masks keep the older way below (a count of ours, which they do not see).
  arms_.fetch_add(1, std::memory_order_acq_rel);
  if (!rearm && borrowable) {
    borrowed_ = true;
    publish(L);
    set_hook_keeping_countdown(L, sampler_hook, saved_.mask | LUA_MASKCALL, saved_.count);
    return true;
  }
  borrowed_ = false;
  publish(L);
  // COUNT: the next Lua instruction. CALL: a function called (the callee started after the
  // tick, so the sample is the caller's). The host's own events stay. RETURN, in a Lua
  // function: Lua 5.4 sees an outside hook only where an instruction re-reads its trap (calls,
  // loops, returns), so a short leaf with neither ran on unseen and its caller took its ticks;
  // the return event fires in the leaf, with the count event's stack check (hook_has_room).
  // Never on a C function (one returning many values could raise "stack overflow"): the C
  // function a tick finds running is noted instead (note_c_frame).
  int events = saved_.mask & (LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE);
  RunningFrame running = running_frame(L);
  if (running.known && !running.c_function) events |= LUA_MASKRET;
  set_hook(L, sampler_hook, LUA_MASKCOUNT | LUA_MASKCALL | events, 1);
  return true;
}

// Our hook is armed on L, waiting for its safe point: on the program's borrowed events, or on
// a count of ours. (Under call counting our hook is on every thread, with a count when the
// program's hook has one: not armed for that.) Signal-safe: field reads.
bool LuaSafePointArm::still_armed(lua_State* L) const {
  return armed_.load(std::memory_order_acquire) == L && lua_gethook(L) == sampler_hook &&
         (borrowed_ || blocked_arm_ || (lua_gethookmask(L) & LUA_MASKCOUNT));
}

// Lua 5.4.0-5.4.2 grow a stack with realloc and then correct every pointer into it: from the
// realloc until the state's base pointer leaves the old block, its frames lead into freed
// memory. (A later move of the stack, seen or not, also ends the wait.)
bool LuaSafePointArm::stack_settled(lua_State* L) {
  const std::uintptr_t moving = moving_stack_.load(std::memory_order_acquire);
  if (!moving) return true;
  if (moving == kStackInRealloc || reinterpret_cast<std::uintptr_t>(stack_block(L)) == moving) return false;
  moving_stack_.store(0, std::memory_order_relaxed);  // the move is over
  return true;
}

// The C function running on L, if any: the sample taken at the next safe point charges it even
// when it has returned by then.
void LuaSafePointArm::note_c_frame(lua_State* L) {
  RunningFrame f = running_frame(L);
  pending_c_ = f.c_function && f.c_fn ? PendingCFrame{f.c_fn, f.ci} : PendingCFrame{};
}

// Puts back the hook the armed state had. `fired`: called from the armed hook itself, which
// restores the program's instruction countdown (restore_countdown); otherwise the countdown
// the arm found is put back here. Signal context, or normal context inside the engine's critical section.
void LuaSafePointArm::disarm(bool fired, const ArmContext&) {
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (!armed) return;
  last_restored_ = saved_.hook != sampler_hook ? saved_ : HostHook{};
  if (lua_gethook(armed) == sampler_hook) {
    if (borrowed_) {
      set_hook_keeping_countdown(armed, saved_.hook, saved_.mask, saved_.count);  // it went on under ours
    } else {
      set_hook(armed, saved_.hook, saved_.mask, saved_.count);
      int* countdown = fired || saved_.countdown <= 0 ? nullptr : hook_countdown(armed);
      if (countdown) *countdown = saved_.countdown;
    }
  }
  if (!fired) pending_c_ = {};
  blocked_arm_ = false;
  publish(nullptr);
}

void LuaSafePointArm::publish(lua_State* L) {
  // A thread's block holds LUA_EXTRASPACE bytes before the state (lstate.c, LX).
  armed_block_.store(L ? reinterpret_cast<std::uintptr_t>(L) - LUA_EXTRASPACE : AllocatorTap::kNoArmedBlock,
                     std::memory_order_release);
  armed_.store(L, std::memory_order_release);
}

void LuaSafePointArm::stack_block_grew(const void* old_block, const ArmContext& context) {
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (!armed || !may_be_stack_of(armed, old_block)) return;
  disarm(false, context);
  context.drop_pending();
}

// lua_sethook restarted the program's instruction count: put back what was left of it, less
// the instruction this count event stands for. True when the program's own count event falls
// on this instruction, as it would have without the sample (the restart is then right).
bool LuaSafePointArm::restore_countdown(lua_State* L, const HostHook& host, int event) {
  if (!(host.mask & LUA_MASKCOUNT)) return false;
  int* countdown = hook_countdown(L);
  if (!countdown || host.countdown < 0) return false;  // not located: the count restarts
  int left = host.countdown - (event == LUA_HOOKCOUNT ? 1 : 0);
  if (left <= 0) return true;
  if (lua_gethook(L) == host.hook && lua_gethookmask(L) == host.mask) *countdown = left;
  return false;
}

}  // namespace scriptprof::lua
