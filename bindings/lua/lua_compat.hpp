// The Lua 5.4 calls the module makes, in Lua 5.1's API, for the module's LuaJIT build; nothing
// against Lua 5.4's headers.
#pragma once
extern "C" {
#include <lauxlib.h>
#include <lua.h>
}
#include <cmath>

#if LUA_VERSION_NUM == 501

#ifndef LUA_OK
#define LUA_OK 0
#endif

// 5.4's lua_getfield and lua_rawgeti return the type of the value they push.
#define lua_getfield(L, i, k) (lua_getfield(L, i, k), lua_type(L, -1))
#define lua_rawgeti(L, i, n) (lua_rawgeti(L, i, static_cast<int>(n)), lua_type(L, -1))
#define lua_rawseti(L, i, n) lua_rawseti(L, i, static_cast<int>(n))
// 5.4's lua_pushstring returns the string it pushed.
#define lua_pushstring(L, s) (lua_pushstring(L, s), lua_tostring(L, -1))

#define luaL_typeerror luaL_typerror

inline void* lua_newuserdatauv(lua_State* L, std::size_t size, int) { return lua_newuserdata(L, size); }
inline int lua_absindex(lua_State* L, int i) { return i > 0 || i <= LUA_REGISTRYINDEX ? i : lua_gettop(L) + i + 1; }
inline lua_Integer luaL_len(lua_State* L, int i) { return static_cast<lua_Integer>(lua_objlen(L, i)); }
inline int lua_isinteger(lua_State* L, int i) {
  if (lua_type(L, i) != LUA_TNUMBER) return 0;
  const lua_Number n = lua_tonumber(L, i);
  return std::floor(n) == n && std::fabs(n) < 9007199254740992.0;
}
inline int lua_rawgetp(lua_State* L, int t, const void* p) {
  t = lua_absindex(L, t);
  lua_pushlightuserdata(L, const_cast<void*>(p));
  lua_rawget(L, t);
  return lua_type(L, -1);
}
inline void lua_rawsetp(lua_State* L, int t, const void* p) {
  t = lua_absindex(L, t);
  lua_pushlightuserdata(L, const_cast<void*>(p));
  lua_insert(L, -2);
  lua_rawset(L, t);
}

#endif  // LUA_VERSION_NUM == 501
