#include "lua_library_tables.hpp"

#include "lua_api_compat.hpp"

extern "C" {
#include <lauxlib.h>
}
#include <algorithm>

namespace scriptprof::lua {

void replace_in_library(lua_State* L, const char* library, void (*replace)(lua_State* L, int table)) {
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, library) == LUA_TTABLE) replace(L, lua_gettop(L));
  lua_settop(L, top);
  if (lua_getglobal(L, library) == LUA_TTABLE) replace(L, lua_gettop(L));
  lua_settop(L, top);
}

bool push_originals(lua_State* L, int table, const char* const* names, const lua_CFunction* ours, int n) {
  int top = lua_gettop(L);
  for (int i = 0; i < n; ++i) {
    lua_getfield(L, table, names[i]);
    lua_CFunction f = lua_tocfunction(L, -1);
    if (!f || std::find(ours, ours + n, f) != ours + n) {
      lua_settop(L, top);
      return false;
    }
  }
  return true;
}

void install_wrappers(lua_State* L, int table, const char* const* names, const lua_CFunction* ours, int n,
                      int upvalues) {
  int first = lua_gettop(L) - upvalues + 1;
  for (int i = 0; i < n; ++i) {
    for (int u = 0; u < upvalues; ++u) lua_pushvalue(L, first + u);
    lua_pushcclosure(L, ours[i], upvalues);
    lua_setfield(L, table, names[i]);
  }
  lua_settop(L, first - 1);
}

}  // namespace scriptprof::lua
