// Lua 5.4's public API as the Lua adapter and the module call it, on the headers of Lua 5.1
// (PUC and LuaJIT), 5.2 and 5.3: the one place where the releases' public APIs differ for us.
// Against 5.4 and 5.5 it adds only LUAI_MAXSTACK, which 5.5 keeps private. What differs in the
// releases' private structs lives in lua_state_mirrors.hpp (read by lua_state_layout.cpp);
// which Lua loaded the module, in lua_release.hpp.
#pragma once
extern "C" {
#include <lauxlib.h>
#include <lua.h>
}
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if LUA_VERSION_NUM < 502
#ifndef LUA_OK
#define LUA_OK 0
#endif
// 5.1 reports a tail call as a return of a function that was never entered (LUA_HOOKTAILRET)
// and has no tail-call event; the counting hook reads it as a return.
#define LUA_HOOKTAILCALL (-1)

inline int lua_absindex(lua_State* L, int i) { return i > 0 || i <= LUA_REGISTRYINDEX ? i : lua_gettop(L) + i + 1; }
inline lua_Integer luaL_len(lua_State* L, int i) { return static_cast<lua_Integer>(lua_objlen(L, i)); }
inline void lua_rawgetp(lua_State* L, int t, const void* p) {
  t = lua_absindex(L, t);
  lua_pushlightuserdata(L, const_cast<void*>(p));
  lua_rawget(L, t);
}
inline void lua_rawsetp(lua_State* L, int t, const void* p) {
  t = lua_absindex(L, t);
  lua_pushlightuserdata(L, const_cast<void*>(p));
  lua_insert(L, -2);
  lua_rawset(L, t);
}
#ifndef SCRIPTPROF_LUAJIT  // LuaJIT 2.1 has these three of 5.2's
inline void* luaL_testudata(lua_State* L, int i, const char* name) {
  void* p = lua_touserdata(L, i);
  if (!p || !lua_getmetatable(L, i)) return nullptr;
  luaL_getmetatable(L, name);
  const bool same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same ? p : nullptr;
}
inline void luaL_setmetatable(lua_State* L, const char* name) {
  luaL_getmetatable(L, name);
  lua_setmetatable(L, -2);
}
inline void luaL_setfuncs(lua_State* L, const luaL_Reg* r, int nup) {
  for (; r->name; ++r) {
    for (int i = 0; i < nup; ++i) lua_pushvalue(L, -nup);
    lua_pushcclosure(L, r->func, nup);
    lua_setfield(L, -(nup + 2), r->name);
  }
  lua_pop(L, nup);
}
#endif
#ifndef luaL_newlibtable
#define luaL_newlibtable(L, l) lua_createtable(L, 0, sizeof(l) / sizeof((l)[0]) - 1)
#endif
inline int luaL_getsubtable(lua_State* L, int idx, const char* name) {
  idx = lua_absindex(L, idx);
  lua_getfield(L, idx, name);
  if (lua_istable(L, -1)) return 1;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, idx, name);
  return 0;
}
#endif

#if LUA_VERSION_NUM < 503
#define LUA_LOADED_TABLE "_LOADED"
// The main thread sits this far into the block lua_newstate allocated (LUAI_EXTRASPACE, 0 unless
// the release was built otherwise).
#define LUA_EXTRASPACE 0
// 5.3's getters return the type of the value they push; 5.1 and 5.2's return nothing.
#define lua_getfield(L, i, k) (lua_getfield(L, i, k), lua_type(L, -1))
#define lua_rawgeti(L, i, n) (lua_rawgeti(L, i, static_cast<int>(n)), lua_type(L, -1))
#define lua_rawseti(L, i, n) lua_rawseti(L, i, static_cast<int>(n))
#define lua_rawget(L, i) (lua_rawget(L, i), lua_type(L, -1))
#define lua_gettable(L, i) (lua_gettable(L, i), lua_type(L, -1))
#define lua_rawgetp(L, i, p) (lua_rawgetp(L, i, p), lua_type(L, -1))
#if LUA_VERSION_NUM == 502
#define lua_getglobal(L, k) (lua_getglobal(L, k), lua_type(L, -1))
#endif
inline int lua_isinteger(lua_State* L, int i) {
  if (lua_type(L, i) != LUA_TNUMBER) return 0;
  const lua_Number n = lua_tonumber(L, i);
  return std::floor(n) == n && std::fabs(n) < 9007199254740992.0;
}
#endif

#if LUA_VERSION_NUM < 504
// 5.4's lua_pushstring returns the string it pushed.
#define lua_pushstring(L, s) (lua_pushstring(L, s), lua_tostring(L, -1))
inline void* lua_newuserdatauv(lua_State* L, std::size_t size, int) { return lua_newuserdata(L, size); }
inline int luaL_typeerror(lua_State* L, int arg, const char* tname) {
  return luaL_argerror(L, arg, lua_pushfstring(L, "%s expected, got %s", tname, luaL_typename(L, arg)));
}
#endif

#ifndef LUAI_MAXSTACK
#define LUAI_MAXSTACK 1000000  // 5.5 keeps it in ldo.c, with this default
#endif

namespace scriptprof::lua {
// Whether L is its state's main thread (5.1 keeps no reference to it; lua_pushthread says).
inline bool is_main_thread(lua_State* L) {
  const bool main = lua_pushthread(L) == 1;
  lua_pop(L, 1);
  return main;
}

// The frame ar describes, as an identity: its CallInfo (5.2 on), or its index in 5.1's array.
inline const void* frame_of(const lua_Debug& ar) {
#if LUA_VERSION_NUM >= 502
  return ar.i_ci;
#else
  return reinterpret_cast<const void*>(static_cast<std::intptr_t>(ar.i_ci) + 1);  // never null
#endif
}

// The length of ar->source (5.4 on keep it, for sources with embedded zeros; before, the source
// is a C string).
inline std::size_t source_length(const lua_Debug* ar) {
#if LUA_VERSION_NUM >= 504
  return ar->srclen;
#else
  return ar->source ? std::strlen(ar->source) : 0;
#endif
}
}  // namespace scriptprof::lua
