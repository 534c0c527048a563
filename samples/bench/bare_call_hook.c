/* require "scriptprof_bare_hook".set(): an empty C function as the state's call hook, the
 * floor under call counting in suite_bench.py (Lua's own cost of calling a hook on every call). */
#include <lauxlib.h>
#include <lua.h>

static void empty_hook(lua_State* L, lua_Debug* ar) { (void)L, (void)ar; }

static int set(lua_State* L) {
  lua_sethook(L, empty_hook, LUA_MASKCALL, 0);
  return 0;
}

int luaopen_scriptprof_bare_hook(lua_State* L) {
  lua_newtable(L);
  lua_pushcfunction(L, set);
  lua_setfield(L, -2, "set");
  return 1;
}
