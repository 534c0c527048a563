#include "hook_tracking.hpp"

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}

#include "lua_library_tables.hpp"
#include "lua_registry_keys.hpp"
#include "lua_sampler.hpp"

namespace scriptprof::lua {
namespace {

// Each replacement holds the release's own debug.sethook and debug.gethook as upvalues and
// calls them directly, in its own frame: the argument checks, messages, hook table and hook
// function are the release's, and no call or return event is added.
enum Upvalue { kSetHook = 1, kGetHook };

lua_State* thread_argument(lua_State* L) { return lua_isthread(L, 1) ? lua_tothread(L, 1) : L; }

// Pushes the key ldblib's hook table has for thread L1: the thread (5.2 on), or its address
// as a light userdata (5.1). False (nothing pushed) when L1 cannot be pushed.
bool push_hook_key(lua_State* L, lua_State* L1) {
#if LUA_VERSION_NUM < 502
  lua_pushlightuserdata(L, L1);
  return true;
#else
  return push_thread(L, L1);
#endif
}

// Pushes ldblib's table of the function each thread's hook calls (nil if there is none yet).
// 5.4 keeps it at "_HOOKKEY" in the registry and 5.2 at "_HKEY"; 5.3 and 5.1 under the address
// of a static of their own, which find_hook_table learns once.
int push_hook_table(lua_State* L) {
#if LUA_VERSION_NUM == 502 || LUA_VERSION_NUM >= 504
  return lua_getfield(L, LUA_REGISTRYINDEX, LUA_VERSION_NUM == 502 ? "_HKEY" : "_HOOKKEY");
#else
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kHookTableKey) == LUA_TNIL) return LUA_TNIL;
  return lua_rawget(L, LUA_REGISTRYINDEX);
#endif
}

#if LUA_VERSION_NUM == 503 || LUA_VERSION_NUM == 501
// After the release's sethook gave L1 the function at `fn`: the registry entry whose value is a
// table mapping L1 to that function is ldblib's hook table; its key is kept (once per state).
void find_hook_table(lua_State* L, lua_State* L1, int fn) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kHookTableKey) != LUA_TNIL || !lua_checkstack(L, 6)) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  while (lua_next(L, LUA_REGISTRYINDEX)) {  // key, value
    bool found = false;
    if (lua_type(L, -2) == LUA_TLIGHTUSERDATA && lua_type(L, -1) == LUA_TTABLE && push_hook_key(L, L1)) {
      lua_rawget(L, -2);
      found = lua_rawequal(L, -1, fn);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);  // the value
    if (found) {
      lua_pushvalue(L, -1);
      lua_rawsetp(L, LUA_REGISTRYINDEX, &kHookTableKey);  // the traversal ends here
      lua_pop(L, 1);
      return;
    }
  }
}
#endif

// The release's sethook, then what it set is handed to the sampler, which puts its own hook
// back over it where it must (a pending sample, call counting) and keeps the program's.
int db_sethook(lua_State* L) {
  lua_State* L1 = thread_argument(L);
  lua_CFunction sethook = lua_tocfunction(L, lua_upvalueindex(kSetHook));
  LuaSampler* sampler = LuaSampler::of(L);
  if (!sampler) return sethook(L);
  // A tick that arms between the release's two writes (hook, then mask) reads half of them:
  // then they are written again, whole (the same arguments, the same effect).
  const int top = lua_gettop(L);
  for (;;) {
    const std::uint32_t arms = sampler->arms_so_far();
    sethook(L);  // raises on bad arguments before it changes anything
    if (sampler->arms_so_far() == arms) break;
    lua_settop(L, top);
  }
  // Read as the sampler sees it: a tick may have armed over the new hook already (saving it).
  HostHook set = sampler->program_visible_hook(L, L1);
  sampler->set_program_hook(L, L1, set.hook, set.mask, set.count);
#if LUA_VERSION_NUM == 503 || LUA_VERSION_NUM == 501
  const int fn = lua_isthread(L, 1) ? 2 : 1;
  if (lua_isfunction(L, fn)) {
    LuaSampler::OwnWork own(*sampler);
    find_hook_table(L, L1, fn);
  }
#endif
  return 0;
}

// The thread debug.gethook reads in L1's place: it holds the program's hook as the sampler
// sees it (and the same entry in the release's hook table), and never runs, so the release's
// gethook answers for the program, nothing on L1 changes, and a tick arming L1 meanwhile
// (L1's hook fields then being ours) cannot show through.
lua_State* stand_in(lua_State* L, lua_State* L1, const HostHook& program) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kStandInKey) != LUA_TTHREAD) {
    lua_pop(L, 1);
    lua_newthread(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kStandInKey);
  }
  lua_State* S = lua_tothread(L, -1);  // left on the stack
  lua_sethook(S, program.hook, program.mask, program.count);
  // ldblib keeps each thread's hook function in a table of its own.
  if (push_hook_table(L) == LUA_TTABLE) {
    push_hook_key(L, S);
    if (push_hook_key(L, L1)) lua_rawget(L, -3);  // the function set for L1
    else lua_pushnil(L);
    lua_rawset(L, -3);
  }
  lua_pop(L, 1);
  return S;
}

int db_gethook(lua_State* L) {
  lua_State* L1 = thread_argument(L);
  lua_CFunction gethook = lua_tocfunction(L, lua_upvalueindex(kGetHook));
  LuaSampler* sampler = LuaSampler::of(L);
  if (!sampler) return gethook(L);
  HostHook program = sampler->program_visible_hook(L, L1);
  if (!lua_checkstack(L, 4)) return luaL_error(L, "stack overflow");
  const bool thread_given = lua_isthread(L, 1);
  {
    LuaSampler::OwnWork own(*sampler);
    stand_in(L, L1, program);
  }
  if (thread_given) lua_replace(L, 1);  // gethook(S) for gethook(L1)
  else lua_insert(L, 1);                // gethook(S) for gethook()
  return gethook(L);
}

// Replaces sethook and gethook in `table` by ours holding the release's two. Only when both are
// C functions and neither is ours: a table replaced before (a second attach) or holding a
// program's own function stays as it is.
void replace_in(lua_State* L, int table) {
  static const char* const names[] = {"sethook", "gethook"};  // Upvalue order
  static const lua_CFunction ours[] = {db_sethook, db_gethook};
  if (push_originals(L, table, names, ours, 2)) install_wrappers(L, table, names, ours, 2, 2);
}

}  // namespace

void install_hook_tracking(lua_State* L) { replace_in_library(L, LUA_DBLIBNAME, replace_in); }

}  // namespace scriptprof::lua
