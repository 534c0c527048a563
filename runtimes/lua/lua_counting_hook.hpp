// Call counting's per-call path, inline in sampler_hook: under count_calls the hook runs on
// every call, and the bare call hook already costs about as much as the call itself. The
// common case (a counted call on a state not armed, callee and caller known) is a few loads,
// two compares and an increment; everything else goes through on_hook.
#pragma once
#include "lua_call_counter.hpp"
#include "lua_frame_walk.hpp"
#include "lua_sampler.hpp"
#include "lua_state_layout.hpp"

namespace scriptprof::lua {

[[gnu::always_inline]] inline bool LuaCallCounter::count_quickly(lua_State* L, const lua_Debug* ar,
                                                                 const std::atomic<lua_State*>& armed) {
  // on_hook handles the rest: a sample due on L, a program hook to pass events to, a count
  // list, frames or state layout not verified (quick_), a suspended run, an excluded
  // process, a deep stack (whose room on_hook checks in full). The hook's mask is not read
  // here: a stray one (a new thread's copy of an armed hook) brings an event other than a
  // call, which goes to on_hook, and on_hook puts the hook right.
  const int event = ar->event;
  if ((event != LUA_HOOKCALL && event != LUA_HOOKTAILCALL) || !quick_ || !engine_.counting_calls_now() ||
      armed.load(std::memory_order_acquire) == L || !verified_stack_far_below_limit(L))
    return false;
  // The last callee and the last caller are kept with their ids (recursion, loops: the same
  // functions again); only a change is looked up, and written.
  const SlotPrefix* callee_slot = called_function_slot(ar);
  const void* callee_fp = key_of(callee_slot);
  if (callee_fp != last_fp_) {
    FunctionId id;
    if (!fn_ids_.find(callee_fp, &id)) return false;  // met for the first time
    last_fp_ = callee_fp;
    last_id_ = id;
  }
  // A thread about to run without our hook: the long way, which puts it on.
  if (switches(callee_fp) && !switch_target_hooked(L, callee_slot)) return false;
  const FunctionId callee = last_id_;
  FunctionId caller = kNoFunction;  // a tail call replaced its caller's frame: unknown
  if (event == LUA_HOOKCALL) {
    if (const SlotPrefix* caller_slot = caller_function_slot(ar)) {
      const void* caller_fp = key_of(caller_slot);
      if (caller_fp != last_caller_fp_) {
        FunctionId id;
        if (!fn_ids_.find(caller_fp, &id)) return false;
        last_caller_fp_ = caller_fp;
        last_caller_id_ = id;
      }
      caller = last_caller_id_;
    }
  }
  if (callee == kNoFunction) return true;  // the profiler's own
  if (!engine_.continue_call_run(callee, caller)) start_call_run(callee, caller);
  return true;
}

[[gnu::always_inline]] inline bool LuaSampler::count_call_quickly(lua_State* L, const lua_Debug* ar) {
  return counter_.count_quickly(L, ar, arm_.armed_state());
}

}  // namespace scriptprof::lua
