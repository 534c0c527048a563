// The program's hooks as the sampler's arming sees them: debug.sethook and gethook during a run,
// a new thread's inherited hook, and the program's countdown after a sample. The records of the
// program's hooks are LuaHookSharing's (lua_hook_sharing.hpp).
#include "lua_sampler.hpp"

namespace scriptprof::lua {

void LuaSampler::set_program_hook(lua_State* L, lua_State* L1, lua_Hook hook, int mask, int count) {
  // Lua work (which may allocate, or raise on memory) comes before the critical section.
  LuaHookSharing::ThreadRecord* record = nullptr;
  if (engine_.active() && counting_) {
    record = sharing_.record(L, L1, hook != nullptr);
    if (record) record->program = hook ? HostHook{hook, mask, count} : HostHook{};
    if (hook) note_program_hooks(L);
  }
  SamplerEngine::ArmMove move(engine_);
  bool was_armed = arm_.armed() == L1;
  if (was_armed) arm_.disarm(false, move.context());
  if (engine_.active() && counting_ && !(record && record->lifted)) {
    HostHook program = record ? record->program : HostHook{};
    lua_sethook(L1, sampler_hook, LUA_MASKCALL | program.mask, program.count);
  } else {
    lua_sethook(L1, hook, mask, count);
  }
  // A sample still pending stays armed, over the new hook.
  if (was_armed && engine_.active() && engine_.pending_ticks() > 0) arm_.arm(L1, move.context());
}

HostHook LuaSampler::program_visible_hook(lua_State* L, lua_State* L1) {
  HostHook recorded = sharing_.program_hook(L, L1);
  HostHook h;
  {
    SamplerEngine::ArmMove move(engine_);
    h = hook_of(L1);
    if (h.hook == sampler_hook && arm_.armed() == L1) h = arm_.saved();
  }
  // Ours, not armed: the program's over ours when counting, else a thread made while its
  // creator was armed, which will put back what it copied (on_hook's stray case).
  if (h.hook == sampler_hook) h = counting_ && engine_.active() ? recorded : arm_.last_restored();
  return h;
}

// lua_newthread copied the creator's hook into the new thread, as it copies a program's hook:
// the new thread gets what it would have had without the profiler (under ours when counting).
void LuaSampler::fix_inherited_hook(lua_State* creator, lua_State* created) {
  HostHook visible = program_visible_hook(creator, creator);
  if (counting_ && engine_.active()) {
    if (visible.hook) {
      if (LuaHookSharing::ThreadRecord* record = sharing_.record(creator, created, true)) {
        record->program = visible;
        note_program_hooks(creator);
      }
    }
    sharing_.install(creator, created);
  } else if (lua_gethook(created) == sampler_hook) {
    set_hook(created, visible.hook, visible.mask, visible.count);
  }
}

}  // namespace scriptprof::lua
