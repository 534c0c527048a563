// Exact call counts through the call hook, and the count list: one part of the Lua adapter,
// with its own state (normal context: the hook, and the module between runs).
//
// Identity: the function object read from its frame keys a map of ids that the allocator
// wrapper clears of every freed block, so a new closure at a dead one's address cannot inherit
// its identity; where the frame layout is not the one we know, a weak-keyed table of ids does
// the same. The common call is counted inline in the hook (lua_counting_hook.hpp).
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <atomic>
#include <vector>

#include "lua_function_table.hpp"
#include "lua_hook_sharing.hpp"
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
  void start(lua_State* L);
  // A run ends: the listed functions met show 0 calls, not "not counted".
  void finish(lua_State* L);

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

  // From the allocator wrapper: a freed block may have been a counted function.
  bool watching_frees() const { return !fn_ids_.empty(); }
  void forget_block(const void* block);
  std::size_t own_bytes() const;

 private:
  void count_slowly(lua_State* L, const lua_Debug* ar);
  FunctionId cached_id(lua_State* L, lua_Debug* ar, bool* boundary);
  void reset_id_cache(lua_State* L);
  bool listed(const void* f) const;                  // in the count list (or no list)
  void start_call_run(FunctionId callee, FunctionId caller);  // a new (callee, caller) pair

  SamplerEngine& engine_;
  LuaFunctionTable& functions_;
  const LuaHookSharing& sharing_;
  std::atomic<bool>& own_work_;
  bool quick_ = false;
  std::vector<const void*> list_;        // functions to count (empty: all); held in the registry
  PointerIdMap fn_ids_;                  // function object -> id
  const void* last_fp_ = nullptr;        // the last callee and its id (freed: reset)
  FunctionId last_id_ = kNoFunction;
  const void* last_caller_fp_ = nullptr;  // the last caller and its id
  FunctionId last_caller_id_ = kNoFunction;
};

}  // namespace scriptprof::lua
