#include "lua_frame_walk.hpp"

namespace scriptprof::lua {
namespace {

// The leading fields of Lua 5.4's struct CallInfo (lstate.h), identical in 5.4.0 to 5.4.6.
struct CallInfoPrefix {
  void* func;
  void* top;
  CallInfoPrefix* previous;  // the caller; null only for the state's base CallInfo
  CallInfoPrefix* next;
};

enum class Mode { Unknown, Fast, Slow };
Mode g_mode = Mode::Unknown;  // decided once per process by frame_walk_verified

CallInfoPrefix* ci_of(const lua_Debug* ar) { return reinterpret_cast<CallInfoPrefix*>(ar->i_ci); }

}  // namespace

bool FrameWalk::next(lua_Debug* ar) {
  ++level_;
  if (g_mode != Mode::Fast) return lua_getstack(L_, level_, ar) != 0;
  CallInfoPrefix* caller = ci_of(ar)->previous;
  if (caller == nullptr || caller->previous == nullptr) return false;  // the base CallInfo
  ar->i_ci = reinterpret_cast<struct CallInfo*>(caller);
  return true;
}

bool frame_walk_verified(lua_State* L) {
  if (g_mode != Mode::Unknown) return g_mode == Mode::Fast;
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
  g_mode = agree ? Mode::Fast : Mode::Slow;
  return agree;
}

}  // namespace scriptprof::lua
