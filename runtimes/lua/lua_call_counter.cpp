// LuaCallCounter (lua_call_counter.hpp). The common call never comes here: the hook counts it
// inline (lua_counting_hook.hpp). What comes here is a function met for the first time, a call
// under a program hook or a count list, and the first calls of a run. (No clock reads bracket
// this work: on these machines a thread CPU clock read is a system call; counting is opt-in
// time.) The hook's lua_Debug is the program's too (its own hook is called with it next): it is
// only read here, and a copy is filled when a function is met for the first time.
#include "lua_call_counter.hpp"

#include <algorithm>

#include "allocator_tap.hpp"
#include "lua_frame_walk.hpp"
#include "lua_registry_keys.hpp"
#include "lua_state_layout.hpp"
#include "scriptprof/heap_bytes.hpp"

namespace scriptprof::lua {
namespace {

// Codes the id cache stores besides FunctionIds.
constexpr lua_Integer kCachedBoundary = -1;
constexpr lua_Integer kCachedOwn = -2;

}  // namespace

void LuaCallCounter::reset_id_cache(lua_State* L) {
  lua_createtable(L, 0, 64);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kIdCacheKey);
}

FunctionId LuaCallCounter::cached_id(lua_State* L, lua_Debug* ar, bool* boundary) {
  lua_getinfo(L, "f", ar);  // the function object
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kIdCacheKey) != LUA_TTABLE) {
    lua_pop(L, 2);
    return functions_.intern(L, ar, boundary);
  }
  lua_pushvalue(L, -2);
  if (lua_rawget(L, -2) == LUA_TNUMBER) {
    lua_Integer code = lua_tointeger(L, -1);
    lua_pop(L, 3);
    *boundary = code == kCachedBoundary;
    return code < 0 ? kNoFunction : static_cast<FunctionId>(code);
  }
  lua_pop(L, 1);
  FunctionId id = functions_.intern(L, ar, boundary);
  lua_pushvalue(L, -2);
  lua_pushinteger(L, *boundary ? kCachedBoundary : id == kNoFunction ? kCachedOwn : static_cast<lua_Integer>(id));
  lua_rawset(L, -3);
  lua_pop(L, 2);
  return id;
}

void LuaCallCounter::update_quick(bool counting) {
  quick_ = counting && list_.empty() && !sharing_.program_hooks() &&
                    g_function_pointer_agreements.load(std::memory_order_relaxed) >= kFunctionPointerChecks &&
                    g_state_layout_verified.load(std::memory_order_acquire);
}

void LuaCallCounter::count(lua_State* L, const lua_Debug* ar) {
  if (!function_pointer_verified(L, ar)) return count_slowly(L, ar);
  if (!quick_ && !sharing_.program_hooks() && list_.empty()) update_quick(true);  // pointers now trusted
  // Fast path: the functions are read from the frames and looked up in a C++ map that the
  // allocator wrapper keeps clear of dead functions' addresses (lua_call_counter.hpp), so an
  // address reused by a new prototype or closure never inherits an old id.
  const SlotPrefix* callee_slot = frame_function_slot(ar);
  if (!callee_slot || !listed(callee_slot->value)) return;
  const void* callee_fp = key_of(callee_slot);
  FunctionId callee;
  if (callee_fp == last_fp_) {
    callee = last_id_;  // recursion and loops call the same function again and again
  } else if (!fn_ids_.find(callee_fp, &callee)) {
    bool boundary = false;
    lua_Debug copy = *ar;
    callee = functions_.intern(L, &copy, &boundary);
    remember(callee_fp, callee);
  }
  last_fp_ = callee_fp;
  last_id_ = callee;
  if (callee == kNoFunction) return;
  // A tail call replaced its caller's frame: the caller is unknown then.
  FunctionId caller = kNoFunction;
  if (ar->event == LUA_HOOKCALL) {
    if (const SlotPrefix* caller_slot = frame_function_slot(ar, true)) {
      const void* caller_fp = key_of(caller_slot);
      if (caller_fp == last_caller_fp_) {
        caller = last_caller_id_;
      } else if (!fn_ids_.find(caller_fp, &caller)) {
        lua_Debug below;
        bool boundary = false;
        if (lua_getstack(L, 1, &below)) {
          caller = functions_.intern(L, &below, &boundary);
          remember(caller_fp, caller);
        }
      }
      last_caller_fp_ = caller_fp;
      last_caller_id_ = caller;
    }
  }
  engine_.record_call(callee, caller);
}

// Only a change of (callee, caller) reaches the profiles, and may allocate there: that is the
// profiler's own memory, not the program's. Out of line: the quick path stays free of calls.
void LuaCallCounter::start_call_run(FunctionId callee, FunctionId caller) {
  OwnWorkScope own(own_work_);
  engine_.record_call(callee, caller);
}

// A dead function's key leaves the map when another function object is made at its address
// (or when freed, sampling allocations): one that is never reused stays. A program that loads
// code without end fills it: past kMaxIds it starts afresh (the ids themselves are the
// function table's, and the map is only their cache).
void LuaCallCounter::remember(const void* key, FunctionId id) {
  constexpr std::size_t kMaxIds = std::size_t(1) << 16;
  if (fn_ids_.size() >= kMaxIds) {
    fn_ids_.clear();
    last_fp_ = last_caller_fp_ = nullptr;
  }
  fn_ids_.insert(key, id);
}

bool LuaCallCounter::listed(const void* f) const {
  return list_.empty() || std::find(list_.begin(), list_.end(), f) != list_.end();
}

void LuaCallCounter::forget_block(std::uintptr_t address) {
  const void* block = reinterpret_cast<const void*>(address);
  fn_ids_.erase(block);
  if (block == last_fp_) last_fp_ = nullptr;
  if (block == last_caller_fp_) last_caller_fp_ = nullptr;
}

// Where the frame layout is not the one we know: identities through a weak-keyed table.
void LuaCallCounter::count_slowly(lua_State* L, const lua_Debug* frame) {
  lua_Debug copy = *frame;
  lua_Debug* ar = &copy;
  if (!list_.empty()) {
    lua_getinfo(L, "f", ar);
    const void* f = lua_topointer(L, -1);
    lua_pop(L, 1);
    if (!listed(f)) return;
  }
  bool boundary = false;
  FunctionId callee = cached_id(L, ar, &boundary);
  if (callee == kNoFunction) return;
  FunctionId caller_id = kNoFunction;
  lua_Debug caller;
  if (ar->event == LUA_HOOKCALL && lua_getstack(L, 1, &caller)) {
    bool b = false;
    caller_id = cached_id(L, &caller, &b);
  }
  engine_.record_call(callee, caller_id);
}


// The listed functions met in the run were counted: 0 calls is a count for them (one that ran
// from before the run, or was only sampled). Functions not listed stay "not counted".
void LuaCallCounter::finish(lua_State* L) {
  if (list_.empty()) return;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kCountListKey) == LUA_TTABLE) {
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; ++i) {
      FunctionId id;
      if (functions_.find_function_value(L, -1, &id)) engine_.mark_counted(id);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);  // the nil that ended the list
  }
  lua_pop(L, 1);
}

void LuaCallCounter::set_list(lua_State* L, int idx) {
  OwnWorkScope own(own_work_);
  idx = lua_absindex(L, idx);
  list_.clear();
  if (lua_isnoneornil(L, idx)) {
    lua_pushnil(L);
  } else {
    lua_createtable(L, 8, 0);  // held for the run: a listed closure keeps its address
    for (lua_Integer i = 1; lua_rawgeti(L, idx, i) != LUA_TNIL; ++i) {
      list_.push_back(lua_topointer(L, -1));
      lua_rawseti(L, -2, i);
    }
    lua_pop(L, 1);
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kCountListKey);
}

void LuaCallCounter::start(lua_State* L, bool closures_apart) {
  // (The closures' layout is checked with the frames': 5.2 on.)
  by_body_ = !closures_apart && g_state_layout_verified.load(std::memory_order_acquire) && layout_reads_frames();
  reset_id_cache(L);  // ids are per profile
  fn_ids_.clear();    // frees were not watched while stopped
  last_fp_ = last_caller_fp_ = nullptr;
}

void LuaCallCounter::set_switch_functions(const ReleaseCoroutineFunctions& f) {
  const void* keys[3] = {reinterpret_cast<const void*>(f.resume), reinterpret_cast<const void*>(f.close),
                         reinterpret_cast<const void*>(f.wrap)};
  // (No close before 5.4: null, which no key is.)
  for (int i = 0; i < 3; ++i) switch_[i] = by_body_ ? keys[i] : nullptr;
}

std::size_t LuaCallCounter::own_bytes() const { return heap_block(fn_ids_.bytes()) + heap_bytes(list_); }

}  // namespace scriptprof::lua
