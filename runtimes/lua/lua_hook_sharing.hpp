// Sharing Lua's one hook per thread with the program under call counting: one part of the Lua
// adapter, with its own state (normal context: the hook and the debug library's stand-ins).
//
// Lua has a single hook per lua_State. Under call counting ours is on every thread; a hook the
// program sets with debug.sethook (or had set before the run) is kept in a record of that
// thread and called from ours with the event and the untouched lua_Debug, so it sees exactly
// what it would see alone. The records live in a weak-keyed registry table: a record dies with
// its coroutine, and nothing the profiler keeps can name a freed lua_State (a collected
// coroutine's address is soon another object's).
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"
#include "lua_thread_push.hpp"

#include <atomic>

#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::lua {

// A hook as a state has it: the function, its events and count.
struct HostHook {
  lua_Hook hook = nullptr;
  int mask = 0;
  int count = 0;
  int countdown = -1;  // instructions left before its count event, when known
};

// L's hook as lua_gethook and friends give it (a field read each: signal-safe).
inline HostHook hook_of(lua_State* L) { return {lua_gethook(L), lua_gethookmask(L), lua_gethookcount(L)}; }

// The sampler's Lua hook (the same function on every thread and for every event).
void sampler_hook(lua_State* L, lua_Debug* ar);

class LuaHookSharing {
 public:
  // The program's hook on one thread, and whether our counting hook stepped aside there.
  struct ThreadRecord {
    HostHook program;      // the program's own hook there (hook null: none)
    bool lifted = false;   // our counting hook is off: the stack is too near its limit
  };

  // Hooks are set inside `engine`'s arm guard; records are made as the profiler's own work.
  LuaHookSharing(SamplerEngine& engine, std::atomic<bool>& own_work) : engine_(engine), own_work_(own_work) {}

  // `thread`'s record (L: the running thread, to reach the registry), made when `create`; null
  // when there is none or no stack room to look.
  ThreadRecord* record(lua_State* L, lua_State* thread, bool create);
  // Some thread has a program hook: every event of ours may be one to pass on.
  bool program_hooks() const { return program_hooks_; }
  void note_program_hook() { program_hooks_ = true; }
  // The program's own hook on `thread` (none unless some thread has one).
  HostHook program_hook(lua_State* L, lua_State* thread);

  // Our counting hook on `thread`, carrying the events and the count of the program's hook there.
  void install(lua_State* L, lua_State* thread);
  // The same, keeping a hook the program had set there under ours. True when it kept one.
  bool take_over(lua_State* L, lua_State* thread);
  // At a run's end: every thread still alive gets back the hook the program set there.
  void restore_all(lua_State* L);

  // L's stack is so near LUAI_MAXSTACK that the call hook of its next call could fail where the
  // program alone would not: our hook steps aside (calls there go uncounted) until relift()
  // finds room again at a sample.
  void lift(lua_State* L);
  bool lifted(lua_State* L, lua_State* thread);
  void relift(lua_State* L);

 private:
  SamplerEngine& engine_;
  std::atomic<bool>& own_work_;
  bool program_hooks_ = false;  // some thread has a program hook
  bool lifted_ = false;         // some thread's hook is lifted
};

}  // namespace scriptprof::lua
