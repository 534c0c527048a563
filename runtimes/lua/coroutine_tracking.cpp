#include "coroutine_tracking.hpp"

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}

#include <cstring>

#include "lua_library_tables.hpp"
#include "lua_sampler.hpp"

namespace scriptprof::lua {
namespace {

// Each replacement holds the running release's own functions as upvalues and calls them
// directly, in its own frame: no call level is added (Lua's C-call limit and luaL_where see
// what they see unprofiled), and results, errors and to-be-closed handling are the release's.
// Around the call the sampler is told which coroutine runs; the release's function must then
// not raise between the two, so it is called only where it cannot.
enum Upvalue { kResume = 1, kClose, kCreate, kWrap, kCloseErrorWins };

lua_CFunction release_function(lua_State* L, int upvalue) {
  return lua_tocfunction(L, lua_upvalueindex(upvalue));
}

// The release's function f on the arguments in L's frame, with the sampler told that co runs
// meanwhile when `switches`. f must not raise then (the leave would be skipped).
int call_in(lua_State* L, lua_State* co, lua_CFunction f, bool switches) {
  LuaSampler* sampler = switches ? LuaSampler::of(L) : nullptr;
  if (sampler) sampler->enter_coroutine(L, co);
  int results = f(L);
  if (sampler) sampler->leave_coroutine(co, L);
  return results;
}

// The release's coroutine.resume on the arguments in L's frame, co (a thread) the first.
// It raises only on a non-thread first argument, checked before it is called.
int resume_tracked(lua_State* L, lua_State* co, lua_CFunction resume) { return call_in(L, co, resume, true); }

int co_resume(lua_State* L) {
  lua_CFunction resume = release_function(L, kResume);
  lua_State* co = lua_tothread(L, 1);
  return co ? resume_tracked(L, co, resume) : resume(L);  // not a thread: the release's error
}

#if LUA_VERSION_NUM >= 504
// The release's coroutine.close of co, the only argument. The __close handlers it runs execute
// in co, so their samples belong to co, stitched under the closing code. Told only when co is
// dead or suspended: the release raises for a normal coroutine, and a running one (5.5) closes
// itself without returning, in the state that runs anyway.
int close_tracked(lua_State* L, lua_State* co, lua_CFunction close) {
  lua_Debug ar;
  return call_in(L, co, close, co != L && (lua_status(co) != LUA_OK || !lua_getstack(co, 0, &ar)));
}

int co_close(lua_State* L) {
  lua_CFunction close = release_function(L, kClose);
  lua_State* co = lua_tothread(L, 1);
  return co ? close_tracked(L, co, close) : close(L);
}

#endif

#if LUA_VERSION_NUM >= 504
lua_CFunction co_close_function() { return co_close; }
#else
lua_CFunction co_close_function() { return nullptr; }
#endif

int co_create(lua_State* L) {
  int results = release_function(L, kCreate)(L);
  if (LuaSampler* sampler = LuaSampler::of(L)) sampler->fix_inherited_hook(L, lua_tothread(L, -1));
  return results;
}

// The function coroutine.wrap returns: the release's resume, then what every 5.4 release's
// wrapper does with an error from inside the coroutine: close its to-be-closed variables (the
// release's close) and raise, with the caller's position before a string that is not a memory
// error. Upvalues: the thread, the release's resume and close, and whether a __close's error
// replaces the coroutine's (5.4.3 on; close_error_wins).
int co_wrapped(lua_State* L) {
  lua_State* co = lua_tothread(L, lua_upvalueindex(1));
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  int r = resume_tracked(L, co, lua_tocfunction(L, lua_upvalueindex(2)));
  if (lua_toboolean(L, -r)) return r - 1;  // true, results...
  lua_replace(L, 1);  // false, error: the error object alone
  lua_settop(L, 1);
#if LUA_VERSION_NUM < 504
  // Before 5.4 there is nothing to close, and any error (5.1 and 5.2: a number too) gets the
  // caller's position.
#if LUA_VERSION_NUM < 503
  const bool positioned = lua_isstring(L, -1);
#else
  const bool positioned = lua_type(L, -1) == LUA_TSTRING;
#endif
  if (positioned) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
#else
  int stat = lua_status(co);
  if (stat != LUA_OK && stat != LUA_YIELD) {  // the error happened inside the coroutine
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);  // co, error
    int n = close_tracked(L, co, lua_tocfunction(L, lua_upvalueindex(3)));
    if (n == 2 && !lua_rawequal(L, -1, 2) && lua_toboolean(L, lua_upvalueindex(4))) {
      // A __close raised. Its status is not returned by close: a memory error is Lua's own
      // message (a program raising that very string loses the position, nothing else).
      const char* s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
      stat = s && std::strcmp(s, "not enough memory") == 0 ? LUA_ERRMEM : LUA_ERRRUN;
    } else {
      lua_settop(L, 2);
    }
  }
  if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
#endif
}

// The release's wrap, its function replaced by ours around the same thread.
int co_wrap(lua_State* L) {
  int top = lua_gettop(L);
  release_function(L, kWrap)(L);
  // The release's wrapper keeps the thread as its only upvalue; anything else is left alone.
  if (!lua_getupvalue(L, -1, 1) || !lua_isthread(L, -1)) {
    lua_settop(L, top + 1);
    return 1;
  }
  if (LuaSampler* sampler = LuaSampler::of(L)) sampler->fix_inherited_hook(L, lua_tothread(L, -1));
  lua_pushvalue(L, lua_upvalueindex(kResume));
  lua_pushvalue(L, lua_upvalueindex(kClose));
  lua_pushvalue(L, lua_upvalueindex(kCloseErrorWins));
  lua_pushcclosure(L, co_wrapped, 4);
  return 1;
}

// A new thread on L's stack, without the hook lua_newthread copied from L: Lua code the
// profiler runs there is seen by no hook, the program's or ours.
lua_State* hookless_thread(lua_State* L) {
  lua_State* T = lua_newthread(L);
  lua_sethook(T, nullptr, 0, 0);
  return T;
}

#if LUA_VERSION_NUM >= 504
// A coroutine body for close_error_wins: a to-be-closed value whose __close raises "close",
// then the error "body".
int probe_body(lua_State* L) {
  lua_newtable(L);
  lua_newtable(L);
  lua_pushcfunction(L, [](lua_State* L1) -> int {
    lua_pushliteral(L1, "close");
    return lua_error(L1);
  });
  lua_setfield(L, -2, "__close");
  lua_setmetatable(L, -2);
  lua_toclose(L, -1);
  lua_pushliteral(L, "body");
  return lua_error(L);
}

// Whether the release's wrapper raises a __close's error in place of the coroutine's, as 5.4.3
// on do (5.4.0-5.4.2 keep the coroutine's): asked of the release itself, once per attach, since
// every 5.4 reports the same lua_version.
// Asked on a thread of its own without a hook: no hook on L (the program's, or ours passing
// events to it under counting) sees the probe's calls.
bool close_error_wins(lua_State* L, lua_CFunction wrap) {
  int top = lua_gettop(L);
  bool wins = false;
  lua_State* T = hookless_thread(L);
  lua_pushcfunction(T, wrap);
  lua_pushcfunction(T, probe_body);
  if (lua_pcall(T, 1, 1, 0) == LUA_OK && lua_pcall(T, 0, 0, 0) != LUA_OK) {
    const char* message = lua_tostring(T, -1);
    wins = message && std::strstr(message, "close") != nullptr;
  }
  lua_settop(L, top);
  return wins;
}

// Replaces the four functions in `table` by ours, each holding the release's four and the
// answer of close_error_wins as upvalues. Only when all four are C functions and none is ours:
// a table replaced before (a second attach) or holding a function the program put there
// itself stays as it is.
void replace_in(lua_State* L, int table) {
  static const char* const names[] = {"resume", "close", "create", "wrap"};  // Upvalue order
  static const lua_CFunction ours[] = {co_resume, co_close, co_create, co_wrap};
  if (!push_originals(L, table, names, ours, 4)) return;
  lua_pushboolean(L, close_error_wins(L, lua_tocfunction(L, -1)));  // wrap: the last original
  install_wrappers(L, table, names, ours, 4, 5);
}
#else
// Before 5.4 there is no coroutine.close: its upvalue is nil, and nothing closes.
void replace_in(lua_State* L, int table) {
  static const char* const names[] = {"resume", "create", "wrap"};
  static const lua_CFunction ours[] = {co_resume, co_create, co_wrap};
  if (!push_originals(L, table, names, ours, 3)) return;
  lua_pushnil(L);
  lua_insert(L, -3);  // resume, (close), create, wrap: the upvalues' order
  lua_pushboolean(L, 0);
  install_wrappers(L, table, names, ours, 3, 5);
}
#endif

const char* const kNames[] = {"resume", "close", "create", "wrap"};  // Upvalue order

// Our replacement of kNames[which] (null: none, close before 5.4).
lua_CFunction our_function(int which) {
  static const lua_CFunction ours[] = {co_resume, co_close_function(), co_create, co_wrap};
  return ours[which];
}

// Pushes the release's function behind table[kNames[which]]: the upvalue ours holds it in,
// returning true, when the field is ours; else the field's value itself.
bool push_release_function(lua_State* L, int table, int which) {
  lua_getfield(L, table, kNames[which]);
  const lua_CFunction ours = our_function(which);
  if (!ours || lua_tocfunction(L, -1) != ours || !lua_getupvalue(L, -1, which + 1)) return false;
  lua_remove(L, -2);
  return true;
}

// The release's function behind table[kNames[which]] (null: not a C function).
lua_CFunction release_function_in(lua_State* L, int table, int which) {
  push_release_function(L, table, which);
  const lua_CFunction f = lua_tocfunction(L, -1);
  lua_pop(L, 1);
  return f;
}

// Puts the release's functions back in `table` where ours are.
void restore_in(lua_State* L, int table) {
  for (int which = 0; which < 4; ++which) {
    if (push_release_function(L, table, which) && lua_iscfunction(L, -1)) lua_setfield(L, table, kNames[which]);
    lua_settop(L, table);
  }
}

}  // namespace

lua_CFunction wrapped_coroutine_function() { return co_wrapped; }

// On a thread of its own without a hook, as close_error_wins.
lua_CFunction wrapped_by(lua_State* L, lua_CFunction wrap) {
  lua_State* T = hookless_thread(L);
  lua_pushcfunction(T, wrap);
  // A Lua function to wrap (5.1's wrap refuses a C one).
  const bool ok = luaL_loadstring(T, "") == LUA_OK && lua_pcall(T, 1, 1, 0) == LUA_OK;
  lua_CFunction f = ok ? lua_tocfunction(T, -1) : nullptr;
  lua_pop(L, 1);
  return f;
}

void install_coroutine_tracking(lua_State* L) { replace_in_library(L, LUA_COLIBNAME, replace_in); }

void remove_coroutine_tracking(lua_State* L) { replace_in_library(L, LUA_COLIBNAME, restore_in); }

ReleaseCoroutineFunctions release_coroutine_functions(lua_State* L) {
  ReleaseCoroutineFunctions r;
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, LUA_COLIBNAME) == LUA_TTABLE) {
    const int table = lua_gettop(L);
    r.resume = release_function_in(L, table, kResume - 1);
    r.wrap = release_function_in(L, table, kWrap - 1);
#if LUA_VERSION_NUM >= 504
    r.close = release_function_in(L, table, kClose - 1);
#endif
  }
  lua_settop(L, top);
  return r;
}

}  // namespace scriptprof::lua
