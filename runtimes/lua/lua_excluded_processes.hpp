// Allegro's profile-process-p for Lua threads: the coroutines (or main thread) whose samples,
// calls and bytes are not collected. A part shared by the Lua and LuaJIT adapters (normal
// context). An excluded thread is held in the registry while it is excluded, so no new thread
// can take its address and its exclusion.
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <cstddef>
#include <unordered_set>

namespace scriptprof::lua {

class ExcludedProcesses {
 public:
  // Excludes `thread` (profiled false) or profiles it again; L is the running thread. False,
  // with nothing changed, when there is no stack room to key the registry by `thread`.
  bool set(lua_State* L, lua_State* thread, bool profiled);
  bool excluded(lua_State* thread) const { return !threads_.empty() && threads_.count(thread) > 0; }
  bool any() const { return !threads_.empty(); }
  std::size_t own_bytes() const;

 private:
  std::unordered_set<lua_State*> threads_;
};

}  // namespace scriptprof::lua
