/* A C module as a script requires one, linked against no Lua library: it resolves Lua's API
   from the program that loads it, which a launcher linked statically must export. */
#include <lauxlib.h>
#include <lua.h>

static int add(lua_State* L) {
  lua_pushnumber(L, luaL_checknumber(L, 1) + luaL_checknumber(L, 2));
  return 1;
}

int luaopen_api_probe(lua_State* L) {
  lua_newtable(L);
  lua_pushcfunction(L, add);
  lua_setfield(L, -2, "add");
  return 1;
}
