// What a LuaJIT run collects from: Allegro's count list (exact calls of listed functions only)
// and its excluded processes (profile-process-p). The listed functions and the excluded
// threads are held in the registry while they are listed, so their addresses stay theirs.
extern "C" {
#include <lauxlib.h>
}

#include <algorithm>

#include "luajit_sampler.hpp"
#include "scriptprof/heap_bytes.hpp"

namespace scriptprof::luajit {
namespace {
constexpr char kCountList[] = "scriptprof.count_list";
}  // namespace

void LuaJitSampler::set_count_list(lua_State* L, int idx) {
  if (engine_.active()) return;
  idx = lua_absindex(L, idx);
  count_list_.clear();
  lua_createtable(L, 0, 0);
  if (lua_type(L, idx) == LUA_TTABLE) {
    for (int i = 1;; ++i) {
      lua_rawgeti(L, idx, i);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        break;
      }
      if (lua_type(L, -1) == LUA_TFUNCTION) {
        count_list_.push_back(lua_topointer(L, -1));
        lua_rawseti(L, -2, static_cast<int>(count_list_.size()));
      } else {
        lua_pop(L, 1);
      }
    }
  }
  lua_setfield(L, LUA_REGISTRYINDEX, kCountList);
}

// At the end of a counted run: a listed function never called shows 0 calls, not "unknown".
void LuaJitSampler::mark_listed_counted(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kCountList);
  for (int i = 1; lua_type(L, -1) == LUA_TTABLE; ++i) {
    lua_rawgeti(L, -1, i);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    engine_.mark_counted(functions_.value_id(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

bool LuaJitSampler::set_process_profiled(lua_State* L, lua_State* thread, bool profiled) {
  return excluded_.set(L, thread, profiled);
}

bool LuaJitSampler::process_profiled(lua_State* thread) const { return !excluded_.excluded(thread); }

std::size_t LuaJitSampler::own_bytes() const {
  return functions_.own_bytes() + excluded_.own_bytes() + hash_table_bytes(process_ids_);
}

}  // namespace scriptprof::luajit
