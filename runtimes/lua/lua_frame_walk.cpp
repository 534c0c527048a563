#include "lua_frame_walk.hpp"

#include <atomic>
#include <climits>

namespace scriptprof::lua {
namespace {

enum class Mode { Unknown, Fast, Slow };
// Process-wide, and states on several threads may decide them at once: atomics (relaxed: each
// value is final once written, and any thread's check gives the same answer).
std::atomic<Mode> g_mode{Mode::Unknown};  // decided once per process by frame_walk_verified

#if LUA_VERSION_NUM >= 502
CallInfoPrefix* ci_of(const lua_Debug* ar) { return reinterpret_cast<CallInfoPrefix*>(ar->i_ci); }
#endif

}  // namespace

bool FrameWalk::next(lua_Debug* ar) {
  ++level_;
#if LUA_VERSION_NUM >= 502
  if (g_mode.load(std::memory_order_relaxed) == Mode::Fast) {
    CallInfoPrefix* caller = ci_of(ar)->previous;
    if (caller == nullptr || caller->previous == nullptr) return false;  // the base CallInfo
    ar->i_ci = reinterpret_cast<struct CallInfo*>(caller);
    return true;
  }
#endif
  return lua_getstack(L_, level_, ar) != 0;
}

bool frame_walk_verified(lua_State* L) {
  Mode decided = g_mode.load(std::memory_order_relaxed);
  if (decided != Mode::Unknown) return decided == Mode::Fast;
#if LUA_VERSION_NUM < 502
  (void)L;
  g_mode.store(Mode::Slow, std::memory_order_relaxed);
  return false;
#else
  lua_Debug a, b;
  bool agree = true;
  int level = 0;
  bool more = lua_getstack(L, 0, &a) != 0;
  while (more && agree && level < 64) {
    bool expected = lua_getstack(L, level + 1, &b) != 0;
    CallInfoPrefix* caller = ci_of(&a)->previous;
    bool fast = caller != nullptr && caller->previous != nullptr;
    agree = fast == expected && (!expected || reinterpret_cast<void*>(caller) == reinterpret_cast<void*>(b.i_ci));
    a = b;
    more = expected;
    ++level;
  }
  g_mode.store(agree ? Mode::Fast : Mode::Slow, std::memory_order_relaxed);
  return agree;
#endif
}

bool check_function_pointers(lua_State* L, const lua_Debug* frame) {
  if (g_function_pointer_agreements.load(std::memory_order_relaxed) < 0) return false;
  lua_Debug copy = *frame;  // the caller's lua_Debug may be the program's hook argument
  lua_Debug* ar = &copy;
  lua_getinfo(L, "f", ar);
  bool agree = lua_topointer(L, -1) == frame_function_pointer(ar);
  lua_pop(L, 1);
  lua_Debug below;
  if (agree && lua_getstack(L, 1, &below)) {
    lua_getinfo(L, "f", &below);
    agree = lua_topointer(L, -1) == frame_function_pointer(ar, true);
    lua_pop(L, 1);
  }
  // Counting stops at kFunctionPointerChecks (the inline check answers from then on), so the
  // count cannot climb from INT_MIN back to trust.
  if (agree) g_function_pointer_agreements.fetch_add(1, std::memory_order_relaxed);
  else g_function_pointer_agreements.store(INT_MIN, std::memory_order_relaxed);
  return agree;
}

}  // namespace scriptprof::lua
