#include "hook_tracking.hpp"

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}
#include <atomic>
#include <cstring>
#include <mutex>

#include "lua_library_tables.hpp"
#include "lua_sampler.hpp"

namespace scriptprof::lua {
namespace {

const char kHookKey[] = "_HOOKKEY";  // ldblib.c's registry table: thread -> hook function
std::atomic<lua_Hook> g_lua_hookf{nullptr};  // ldblib.c's hookf, which calls that function
std::mutex g_find_mutex;                     // states on several threads may load us at once

lua_State* getthread(lua_State* L, int* arg) {
  if (lua_isthread(L, 1)) {
    *arg = 1;
    return lua_tothread(L, 1);
  }
  *arg = 0;
  return L;
}

void checkstack(lua_State* L, lua_State* L1, int n) {
  if (L != L1 && !lua_checkstack(L1, n)) luaL_error(L, "stack overflow");
}

int makemask(const char* smask, int count) {
  int mask = 0;
  if (std::strchr(smask, 'c')) mask |= LUA_MASKCALL;
  if (std::strchr(smask, 'r')) mask |= LUA_MASKRET;
  if (std::strchr(smask, 'l')) mask |= LUA_MASKLINE;
  if (count > 0) mask |= LUA_MASKCOUNT;
  return mask;
}

int db_sethook(lua_State* L) {
  int arg, mask, count;
  lua_Hook func;
  lua_State* L1 = getthread(L, &arg);
  if (lua_isnoneornil(L, arg + 1)) {
    lua_settop(L, arg + 1);
    func = nullptr;
    mask = 0;
    count = 0;
  } else {
    const char* smask = luaL_checkstring(L, arg + 2);
    luaL_checktype(L, arg + 1, LUA_TFUNCTION);
    count = static_cast<int>(luaL_optinteger(L, arg + 3, 0));
    func = g_lua_hookf.load(std::memory_order_relaxed);
    mask = makemask(smask, count);
  }
  if (!luaL_getsubtable(L, LUA_REGISTRYINDEX, kHookKey)) {
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_pushvalue(L, -1);
    lua_setmetatable(L, -2);
  }
  checkstack(L, L1, 1);
  lua_pushthread(L1);
  lua_xmove(L1, L, 1);
  lua_pushvalue(L, arg + 1);
  lua_rawset(L, -3);
  if (LuaSampler* sampler = LuaSampler::of(L)) sampler->set_program_hook(L, L1, func, mask, count);
  else lua_sethook(L1, func, mask, count);
  return 0;
}

int db_gethook(lua_State* L) {
  int arg;
  lua_State* L1 = getthread(L, &arg);
  HostHook h = hook_of(L1);
  if (LuaSampler* sampler = LuaSampler::of(L)) h = sampler->program_visible_hook(L, L1);
  if (h.hook == nullptr) {
    luaL_pushfail(L);
    return 1;
  }
  if (h.hook != g_lua_hookf.load(std::memory_order_relaxed)) {
    lua_pushliteral(L, "external hook");
  } else {
    lua_getfield(L, LUA_REGISTRYINDEX, kHookKey);
    checkstack(L, L1, 1);
    lua_pushthread(L1);
    lua_xmove(L1, L, 1);
    lua_rawget(L, -2);
    lua_remove(L, -2);
  }
  char buff[5];
  int i = 0;
  if (h.mask & LUA_MASKCALL) buff[i++] = 'c';
  if (h.mask & LUA_MASKRET) buff[i++] = 'r';
  if (h.mask & LUA_MASKLINE) buff[i++] = 'l';
  buff[i] = '\0';
  lua_pushstring(L, buff);
  lua_pushinteger(L, h.count);
  return 3;
}

// Lua's hookf, taken from the stock debug.sethook on a scratch thread.
bool find_lua_hookf(lua_State* L, int debug_table) {
  std::lock_guard<std::mutex> lock(g_find_mutex);
  if (g_lua_hookf.load()) return true;
  if (lua_getfield(L, debug_table, "sethook") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return false;
  }
  lua_State* scratch = lua_newthread(L);  // sethook, thread
  lua_insert(L, -2);                      // thread, sethook
  lua_pushvalue(L, -2);                   // thread, sethook, thread
  lua_pushcfunction(L, [](lua_State*) { return 0; });
  lua_pushliteral(L, "c");
  bool ok = lua_pcall(L, 3, 0, 0) == LUA_OK;
  if (ok) g_lua_hookf = lua_gethook(scratch);
  lua_pop(L, ok ? 1 : 2);  // the thread (and the error)
  return g_lua_hookf.load() != nullptr;
}

void replace_in(lua_State* L, int table) {
  if (!find_lua_hookf(L, table)) return;
  lua_pushcfunction(L, db_sethook);
  lua_setfield(L, table, "sethook");
  lua_pushcfunction(L, db_gethook);
  lua_setfield(L, table, "gethook");
}

}  // namespace

void install_hook_tracking(lua_State* L) { replace_in_library(L, LUA_DBLIBNAME, replace_in); }

}  // namespace scriptprof::lua
