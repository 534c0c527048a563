#include "lua_attach.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <new>

#include "lua_api_compat.hpp"

#include "coroutine_tracking.hpp"  // wrapped_coroutine_function
#include "hook_tracking.hpp"

namespace scriptprof::lua {
namespace {

const char kHolderMeta[] = "scriptprof.sampler";

int holder_gc(lua_State* L) {
  auto* holder = static_cast<LuaSampler**>(luaL_checkudata(L, 1, kHolderMeta));
  delete *holder;  // stops the timer and removes every hook
  *holder = nullptr;
  return 0;
}

#if LUA_VERSION_NUM < 502
const char kStandInMainKey = 0;  // registry: the coroutine standing in for 5.1's main thread
#endif

}  // namespace

LuaSampler* attach_sampler(lua_State* L) {
  if (LuaSampler* existing = LuaSampler::of(L)) {
#if LUA_VERSION_NUM < 502
    if (existing->main_thread() != L && is_main_thread(L)) existing->set_main_thread(L);
#endif
    return existing;
  }
#if LUA_VERSION_NUM >= 502
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State* main = lua_tothread(L, -1);
  lua_pop(L, 1);
#else
  // 5.1 keeps no reference to its main thread: one that says it is (lua_pushthread) is taken
  // for it whenever it enters the module. A coroutine attaching stands in until then, held in
  // the registry: the sampler uses it to its end, so it must not be collected before.
  lua_State* main = L;
  if (!is_main_thread(L)) {
    lua_pushthread(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kStandInMainKey);
  }
#endif
  // Made first: its allocator tap takes what follows out of the host's heap.
  auto* sampler = new LuaSampler(main);
  LuaSampler::OwnWork own(*sampler);
  // The holder owns the sampler; keeping it in the registry ties it to the state's life.
  auto* holder = static_cast<LuaSampler**>(lua_newuserdatauv(L, sizeof(LuaSampler*), 0));
  *holder = sampler;
  if (luaL_newmetatable(L, kHolderMeta)) {
    lua_pushcfunction(L, holder_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, holder);  // keyed by its own address: unique
  (*holder)->name_c_function(wrapped_coroutine_function(), "coroutine.wrap (function)");
  install_hook_tracking(L);
  return *holder;
}

}  // namespace scriptprof::lua
