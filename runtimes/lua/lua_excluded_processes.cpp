#include "lua_excluded_processes.hpp"

#include "lua_thread_push.hpp"
#include "scriptprof/heap_bytes.hpp"

namespace scriptprof::lua {
namespace {

const char kExcludedKey = 0;  // registry: {[thread] = true} for the excluded threads

}  // namespace

bool ExcludedProcesses::set(lua_State* L, lua_State* thread, bool profiled) {
  if (!lua_checkstack(L, 3)) return false;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kExcludedKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kExcludedKey);
  }
  if (!push_thread(L, thread)) {
    lua_pop(L, 1);
    return false;
  }
  if (profiled) {
    lua_pushnil(L);
    threads_.erase(thread);
  } else {
    lua_pushboolean(L, 1);
    threads_.insert(thread);
  }
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return true;
}

std::size_t ExcludedProcesses::own_bytes() const { return hash_table_bytes(threads_); }

}  // namespace scriptprof::lua
