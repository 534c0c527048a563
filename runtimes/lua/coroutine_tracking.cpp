#include "coroutine_tracking.hpp"

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}

#include "lua_library_tables.hpp"
#include "lua_sampler.hpp"

namespace scriptprof::lua {
namespace {

// Lua 5.4's auxresume, with the sampler told before and after the coroutine runs.
// lua_resume never throws, so the "leave" always follows the "enter".
int resume_tracked(lua_State* L, lua_State* co, int narg) {
  LuaSampler* sampler = LuaSampler::of(L);
  if (!lua_checkstack(co, narg)) {
    lua_pushliteral(L, "too many arguments to resume");
    return -1;
  }
  lua_xmove(L, co, narg);
  if (sampler) sampler->enter_coroutine(L, co);
  int nres = 0;
  int status = lua_resume(co, L, narg, &nres);
  if (sampler) sampler->leave_coroutine(co, L);
  if (status == LUA_OK || status == LUA_YIELD) {
    if (!lua_checkstack(L, nres + 1)) {
      lua_pop(co, nres);
      lua_pushliteral(L, "too many results to resume");
      return -1;
    }
    lua_xmove(co, L, nres);
    return nres;
  }
  lua_xmove(co, L, 1);  // the error object
  return -1;
}

// Lua 5.4.4 reports a non-thread argument as "thread expected" (checked against lua5.4).
lua_State* checked_coroutine(lua_State* L) {
  lua_State* co = lua_tothread(L, 1);
  luaL_argexpected(L, co, 1, "thread");
  return co;
}

int co_resume(lua_State* L) {
  lua_State* co = checked_coroutine(L);
  int r = resume_tracked(L, co, lua_gettop(L) - 1);
  if (r < 0) {
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;  // false, error object
  }
  lua_pushboolean(L, 1);
  lua_insert(L, -(r + 1));
  return r + 1;  // true, results
}

int co_create(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_State* co = lua_newthread(L);
  if (LuaSampler* sampler = LuaSampler::of(L)) sampler->fix_inherited_hook(L, co);
  lua_pushvalue(L, 1);
  lua_xmove(L, co, 1);
  return 1;
}

// What a function made by coroutine.wrap does: on an error inside the coroutine, close its
// to-be-closed variables and propagate the error with position information when it is a string.
int co_wrapped(lua_State* L) {
  lua_State* co = lua_tothread(L, lua_upvalueindex(1));
  int r = resume_tracked(L, co, lua_gettop(L));
  if (r >= 0) return r;
  int stat = lua_status(co);
  if (stat != LUA_OK && stat != LUA_YIELD) {  // the error happened inside the coroutine
    stat = lua_resetthread(co);
    lua_xmove(co, L, 1);
  }
  if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

int co_wrap(lua_State* L) {
  co_create(L);
  lua_pushcclosure(L, co_wrapped, 1);
  return 1;
}

// Lua 5.4.4's auxstatus: what coroutine.status would say of co, seen from L.
enum { kRunning, kDead, kSuspended, kNormal };
int coroutine_status(lua_State* L, lua_State* co) {
  if (L == co) return kRunning;
  switch (lua_status(co)) {
    case LUA_YIELD:
      return kSuspended;
    case LUA_OK: {
      lua_Debug ar;
      if (lua_getstack(co, 0, &ar)) return kNormal;  // it has frames: it resumed another
      return lua_gettop(co) == 0 ? kDead : kSuspended;  // else not started yet
    }
    default:
      return kDead;  // an error ended it
  }
}

// Lua 5.4.4's coroutine.close. The __close handlers it runs execute in co, so their samples
// belong to co, stitched under the closing code.
int co_close(lua_State* L) {
  static const char* const names[] = {"running", "dead", "suspended", "normal"};
  lua_State* co = checked_coroutine(L);
  int status = coroutine_status(L, co);
  if (status != kDead && status != kSuspended)
    return luaL_error(L, "cannot close a %s coroutine", names[status]);
  LuaSampler* sampler = LuaSampler::of(L);
  if (sampler) sampler->enter_coroutine(L, co);
  status = lua_resetthread(co);
  if (sampler) sampler->leave_coroutine(co, L);
  if (status == LUA_OK) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_xmove(co, L, 1);  // the error object
  return 2;
}

void replace_in(lua_State* L, int table) {
  lua_pushcfunction(L, co_close);
  lua_setfield(L, table, "close");
  lua_pushcfunction(L, co_create);
  lua_setfield(L, table, "create");
  lua_pushcfunction(L, co_resume);
  lua_setfield(L, table, "resume");
  lua_pushcfunction(L, co_wrap);
  lua_setfield(L, table, "wrap");
}

}  // namespace

lua_CFunction wrapped_coroutine_function() { return co_wrapped; }

void install_coroutine_tracking(lua_State* L) { replace_in_library(L, LUA_COLIBNAME, replace_in); }

}  // namespace scriptprof::lua
