#include "luajit_attach.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <new>

namespace scriptprof::luajit {
namespace {

constexpr char kSamplerKey[] = "scriptprof.luajit_sampler";

int free_sampler(lua_State* L) {
  auto** slot = static_cast<LuaJitSampler**>(lua_touserdata(L, 1));
  if (slot && *slot) {
    delete *slot;  // stops its run: the profiles its users hold stay valid (shared)
    *slot = nullptr;
  }
  return 0;
}

}  // namespace

LuaJitSampler* attach_sampler(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kSamplerKey);
  auto** slot = static_cast<LuaJitSampler**>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (slot && *slot) return *slot;
  slot = static_cast<LuaJitSampler**>(lua_newuserdata(L, sizeof(LuaJitSampler*)));
  *slot = nullptr;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, free_sampler);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  *slot = new LuaJitSampler(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kSamplerKey);
  return *slot;
}

}  // namespace scriptprof::luajit
