// Exact call counts through the call hook, and the count list: one part of the Lua adapter,
// with its own state (normal context: the hook, and the module between runs).
//
// Identity: what a function is to the reports (a Lua closure's prototype, a C function; with
// closures kept apart, the closure itself), read from its frame, keys a map of ids that the
// allocator wrapper clears of every function object made (or, sampling allocations, of every
// block freed), so a new prototype at a dead one's address cannot inherit its identity; where
// the frame layout is not the one we know, a weak-keyed table of ids does the same. The common
// call is counted inline in the hook (lua_counting_hook.hpp).
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

#include "coroutine_tracking.hpp"
#include "lua_frame_walk.hpp"
#include "lua_function_table.hpp"
#include "lua_hook_sharing.hpp"
#include "lua_state_layout.hpp"
#include "pointer_id_map.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::lua {

class LuaCallCounter {
 public:
  // Counts go to `engine`'s profiles under `functions`' ids; a program hook on any thread
  // (`sharing`) sends every call the long way, to be passed on.
  LuaCallCounter(SamplerEngine& engine, LuaFunctionTable& functions, const LuaHookSharing& sharing,
                 std::atomic<bool>& own_work)
      : engine_(engine), functions_(functions), sharing_(sharing), own_work_(own_work) {}

  // Counts calls of the functions in the sequence at `idx` only (nil clears). Between runs.
  void set_list(lua_State* L, int idx);
  bool has_list() const { return !list_.empty(); }
  // A counting run starts on L: ids are per profile, and frees were not watched while stopped.
  // `closures_apart`: each closure is its own function (interpret_closures).
  void start(lua_State* L, bool closures_apart);
  // A run ends: the listed functions met show 0 calls, not "not counted".
  void finish(lua_State* L);

  // The functions whose calls start another thread: the release's coroutine resume and close,
  // and the C function behind coroutine.wrap's functions. A call of one whose thread lacks our
  // hook goes the long way (where the sampler puts ours on it), so that nothing of ours needs
  // to sit on the switch path. Set at start, after start(); only where keys are C functions and
  // the frames are read (else no call is told apart and sees_switches() is false).
  void set_switch_functions(const ReleaseCoroutineFunctions& f);
  bool sees_switches() const { return by_body_ && switch_[0] != nullptr; }

  // The quick path's standing conditions (a run counting every function, no program hook to
  // pass events to, function pointers read from frames and the state's layout verified), for
  // the hook to test in one byte.
  void update_quick(bool counting);
  void bar_quick() { quick_ = false; }
  // The hook's common case, inline (lua_counting_hook.hpp): true when the call was counted and
  // nothing else is due on L (`armed`: the state armed for a sample); false: count() and the rest.
  bool count_quickly(lua_State* L, const lua_Debug* ar, const std::atomic<lua_State*>& armed);
  // A call event the quick path left (ar is the program's too: only read).
  void count(lua_State* L, const lua_Debug* ar);

  // From the allocator wrapper: a block freed, or a function object made where a counted
  // function may have been. A key is looked up only while its function lives, so forgetting it
  // when another function object is made there (or when it is freed) is enough.
  bool has_ids() const { return !fn_ids_.empty(); }
  void forget_block(std::uintptr_t block);
  std::size_t own_bytes() const;

 private:
  void count_slowly(lua_State* L, const lua_Debug* ar);
  FunctionId cached_id(lua_State* L, lua_Debug* ar, bool* boundary);
  void reset_id_cache(lua_State* L);
  bool listed(const void* f) const;                  // in the count list (or no list)
  void remember(const void* key, FunctionId id);      // into fn_ids_, kept bounded
  void start_call_run(FunctionId callee, FunctionId caller);  // a new (callee, caller) pair
  bool switches(const void* key) const { return key == switch_[0] || key == switch_[1] || key == switch_[2]; }
  // Whether the thread the switch function in `slot` (a call event's callee) will run has our
  // hook, or there is none: a C closure's (a wrap function's) first upvalue, else (resume,
  // close) the first argument, if below L's top.
  static bool switch_target_hooked(lua_State* L, const SlotPrefix* slot) {
    constexpr unsigned char kCClosure = 0x26, kThread = 0x48;  // LUA_VCCL; LUA_VTHREAD, collectable
    const void* thread;
    unsigned char tag;
    if ((slot->tt & 0x3f) == kCClosure) {
      const auto* closure = static_cast<const CClosureHead*>(slot->value);
      thread = closure->upvalue0;
      tag = closure->upvalue0_tt;
    } else {
      const SlotPrefix* argument = slot + 1;
      if (argument >= reinterpret_cast<const StateStackPrefix*>(L)->top) return true;
      thread = argument->value;
      tag = argument->tt;
    }
    return tag != kThread || hook_field(static_cast<const lua_State*>(thread)) == sampler_hook;
  }
  // The map's key for the function in `slot`.
  const void* key_of(const SlotPrefix* slot) const { return by_body_ ? function_body(slot->value, slot->tt) : slot->value; }

  SamplerEngine& engine_;
  LuaFunctionTable& functions_;
  const LuaHookSharing& sharing_;
  std::atomic<bool>& own_work_;
  bool quick_ = false;
  bool by_body_ = false;                 // keys are prototypes and C functions (else closures)
  const void* switch_[3] = {};           // set_switch_functions' keys (null: none)
  std::vector<const void*> list_;        // functions to count (empty: all); held in the registry
  PointerIdMap fn_ids_;                  // key_of(function) -> id
  const void* last_fp_ = nullptr;        // the last callee's key and its id (freed: reset)
  FunctionId last_id_ = kNoFunction;
  const void* last_caller_fp_ = nullptr;  // the last caller and its id
  FunctionId last_caller_id_ = kNoFunction;
};

}  // namespace scriptprof::lua
