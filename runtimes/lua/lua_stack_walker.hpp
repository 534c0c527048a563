// The Lua adapter's stack walk: one part with its own state (normal context, at a safe point).
// The frames of the running state and of every resumer up the coroutine chain, into the
// engine's frame and line sinks, stopping at the profiler's own entry points.
#pragma once
extern "C" {
#include <lua.h>
}

#include <vector>

#include "lua_function_table.hpp"
#include "scriptprof/process_chain.hpp"

namespace scriptprof::lua {

class LuaStackWalker {
 public:
  // Frames are named by `functions`; resumers come from `chain`; the walk fills `frames` and
  // `lines` (the engine's sinks, root first).
  LuaStackWalker(LuaFunctionTable& functions, const ProcessChain& chain, std::vector<FunctionId>& frames,
                 std::vector<int>& lines)
      : functions_(functions), chain_(chain), frames_(frames), lines_(lines) {}

  // Walks L from `first_level` (1: without its running function) and its resumers, root first,
  // into the sinks. True when it met the frame whose CallInfo is `seek_ci` (null: none sought).
  bool walk_sample(lua_State* L, int first_level, const void* seek_ci = nullptr);

 private:
  bool walk(lua_State* L, int first_level);  // leaf first; true when stopped at a boundary

  LuaFunctionTable& functions_;
  const ProcessChain& chain_;
  std::vector<FunctionId>& frames_;
  std::vector<int>& lines_;
  const void* seek_ci_ = nullptr;  // during a walk: the CallInfo sought...
  bool seen_ci_ = false;           // ...and whether it was met
};

}  // namespace scriptprof::lua
