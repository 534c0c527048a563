// Putting one Lua thread on another's stack: the hook records and the excluded processes key
// their registry tables by thread. Shared by the Lua and LuaJIT adapters.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Pushes `thread` onto the running thread L; false (nothing pushed) when `thread` has no free
// slot to push itself from (lua_pushthread pushes onto the thread it names).
inline bool push_thread(lua_State* L, lua_State* thread) {
  if (thread == L) {
    lua_pushthread(L);
    return true;
  }
  if (!lua_checkstack(thread, 1)) return false;
  lua_pushthread(thread);
  lua_xmove(thread, L, 1);
  return true;
}

}  // namespace scriptprof::lua
