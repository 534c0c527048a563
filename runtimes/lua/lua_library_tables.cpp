#include "lua_library_tables.hpp"

extern "C" {
#include <lauxlib.h>
}

namespace scriptprof::lua {

void replace_in_library(lua_State* L, const char* library, void (*replace)(lua_State* L, int table)) {
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, library) == LUA_TTABLE) replace(L, lua_gettop(L));
  lua_settop(L, top);
  if (lua_getglobal(L, library) == LUA_TTABLE) replace(L, lua_gettop(L));
  lua_settop(L, top);
}

}  // namespace scriptprof::lua
