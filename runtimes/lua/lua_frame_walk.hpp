// Walking a Lua stack (5.2 on) in linear time.
//
// lua_getstack(L, level) starts from the top each time, so walking every level with it costs
// O(depth^2): 5e9 steps for a 100k-frame recursion. lua_Debug keeps the frame it describes in
// its `i_ci` field; every CallInfo from 5.2 to 5.5 begins with { func, top, previous, next }, so the
// caller's frame is one pointer away. The first use checks this against lua_getstack, and any
// disagreement switches to lua_getstack for good.
#pragma once
#include <atomic>

extern "C" {
#include <lua.h>
}

// Lua 5.1's frames are an array its lua_Debug indexes, so its lua_getstack costs the same at any
// depth: there the walk is lua_getstack's (frame_walk_verified says no), and no frame's function
// slot is read (frame_function_pointer answers nullptr, so its check never agrees).

namespace scriptprof::lua {

class FrameWalk {
 public:
  // Positions `ar` on the innermost frame of L at `level`; false if there is none.
  bool first(lua_State* L, int level, lua_Debug* ar) {
    L_ = L;
    level_ = level;
    return lua_getstack(L, level, ar) != 0;
  }
  // Moves `ar` to the caller's frame; false past the outermost frame.
  bool next(lua_Debug* ar);

 private:
  lua_State* L_ = nullptr;
  int level_ = 0;
};

// Whether the fast path agrees with lua_getstack on L's current stack (run once by the sampler).
bool frame_walk_verified(lua_State* L);

// The leading fields of struct CallInfo (lstate.h), the same from Lua 5.2 to 5.5.
struct CallInfoPrefix {
  void* func;
  void* top;
  CallInfoPrefix* previous;  // the caller; null only for the state's base CallInfo
  CallInfoPrefix* next;
};

// The leading fields of a stack slot (lobject.h): a Value, then its type tag.
struct SlotPrefix {
  const void* value;  // gc object (closures) or lua_CFunction (light C functions)
  unsigned char tt;   // low 4 bits: the basic type
};
static_assert(sizeof(SlotPrefix) == 16, "a stack slot (StackValue, TValue) is 16 bytes on 64-bit");

// The slot holding the function running in `ar`'s frame (ar->i_ci set, as in a hook), in O(1):
// no value pushed, no table touched. `caller` reads the frame below instead. nullptr when there
// is no such function. Only valid once function_pointer_verified said so.
inline const SlotPrefix* frame_function_slot(const lua_Debug* ar, bool caller = false) {
#if LUA_VERSION_NUM < 502
  (void)ar;
  (void)caller;
  return nullptr;
#else
  const CallInfoPrefix* ci = reinterpret_cast<const CallInfoPrefix*>(ar->i_ci);
  if (caller) {
    ci = ci->previous;
    if (ci == nullptr || ci->previous == nullptr) return nullptr;  // the base CallInfo
  }
  const auto* slot = static_cast<const SlotPrefix*>(ci->func);
  return (slot->tt & 0x0f) == LUA_TFUNCTION ? slot : nullptr;
#endif
}

// That function as lua_topointer gives it; call counting runs on this, once per call (inline).
inline const void* frame_function_pointer(const lua_Debug* ar, bool caller = false) {
  const SlotPrefix* slot = frame_function_slot(ar, caller);
  return slot ? slot->value : nullptr;
}

// Agreements function_pointer_verified has seen, or negative once any check disagreed. From
// kFunctionPointerChecks on, frame_function_pointer is trusted without a check: the counting
// hook reads this once per call. One atomic, so "disagreed" cannot be overtaken by a late count.
inline std::atomic<int> g_function_pointer_agreements{0};
constexpr int kFunctionPointerChecks = 64;

// frame_function_slot for a hook's call event, once function_pointer_verified has agreed:
// a frame being called holds its function, and so does its caller's, so neither slot's type
// is checked again. The caller is nullptr when it is the base CallInfo (called from C).
#if LUA_VERSION_NUM >= 502
inline const SlotPrefix* called_function_slot(const lua_Debug* ar) {
  return static_cast<const SlotPrefix*>(reinterpret_cast<const CallInfoPrefix*>(ar->i_ci)->func);
}
inline const SlotPrefix* caller_function_slot(const lua_Debug* ar) {
  const CallInfoPrefix* ci = reinterpret_cast<const CallInfoPrefix*>(ar->i_ci)->previous;
  return ci->previous ? static_cast<const SlotPrefix*>(ci->func) : nullptr;
}
#else
inline const SlotPrefix* called_function_slot(const lua_Debug*) { return nullptr; }  // never verified
inline const SlotPrefix* caller_function_slot(const lua_Debug*) { return nullptr; }
#endif

// Checks frame_function_pointer against lua_getinfo("f") + lua_topointer for the hook frame
// `ar` of L. Counts agreements; any disagreement turns the fast path off for good.
bool check_function_pointers(lua_State* L, const lua_Debug* ar);
inline bool function_pointer_verified(lua_State* L, const lua_Debug* ar) {
  return g_function_pointer_agreements.load(std::memory_order_relaxed) >= kFunctionPointerChecks ||
         check_function_pointers(L, ar);
}

}  // namespace scriptprof::lua
