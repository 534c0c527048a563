// LuaStackWalker (lua_stack_walker.hpp).
#include "lua_stack_walker.hpp"

#include <algorithm>

#include "lua_frame_walk.hpp"

namespace scriptprof::lua {

bool LuaStackWalker::walk_sample(lua_State* L, int first_level, const void* seek_ci) {
  frames_.clear();
  lines_.clear();
  seek_ci_ = seek_ci;
  seen_ci_ = false;
  walk(L, first_level);
  std::reverse(frames_.begin(), frames_.end());
  std::reverse(lines_.begin(), lines_.end());
  seek_ci_ = nullptr;
  return seen_ci_;
}

// Leaf-first frames of L (into frames_, their lines into lines_), then of each resumer up the
// chain, until a profiler entry point (everything below it is the caller's, not the profiled
// function's). Returns true when it stopped at such a boundary.
bool LuaStackWalker::walk(lua_State* L, int first_level) {
  std::size_t idx = chain_.index_of(L);
  lua_State* s = L;
  const bool linear = frame_walk_verified(L);  // frames come with i_ci, so the func slot is readable
  for (;;) {
    lua_Debug ar;
    FrameWalk frames;
    // A recursion repeats one closure frame after frame: only the first of a run pays for its
    // identity (lua_getinfo "S" and a hash lookup); the others read the func slot and a line.
    const void* run_fp = nullptr;
    FunctionId run_id = kNoFunction;
    bool checked = false, slot_ok = false;
    for (bool ok = frames.first(s, first_level, &ar); ok; ok = frames.next(&ar)) {
      if (seek_ci_ && frame_of(ar) == seek_ci_) seen_ci_ = true;
      const void* fp = slot_ok ? frame_function_pointer(&ar) : nullptr;
      if (fp && fp == run_fp) {
        lua_getinfo(s, "l", &ar);
        frames_.push_back(run_id);
        lines_.push_back(ar.currentline);
        continue;
      }
      bool boundary = false;
      int line = 0;
      FunctionId id = functions_.intern(s, &ar, &boundary, &line);
      if (boundary) return true;
      if (id != kNoFunction) {
        frames_.push_back(id);
        lines_.push_back(line);
      }
      if (linear && !checked) {
        // Checked once per walk on its first frame: the slot read must agree with Lua's own.
        checked = true;
        lua_getinfo(s, "f", &ar);
        slot_ok = lua_topointer(s, -1) == frame_function_pointer(&ar);
        lua_pop(s, 1);
      }
      if (slot_ok) {
        run_fp = id != kNoFunction ? frame_function_pointer(&ar) : nullptr;
        run_id = id;
      }
    }
    if (idx == ProcessChain::kNotInChain || idx == 0) return false;
    s = static_cast<lua_State*>(chain_.at(--idx));
    first_level = 0;
  }
}

}  // namespace scriptprof::lua
