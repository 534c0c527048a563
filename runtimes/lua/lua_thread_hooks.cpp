// Sharing Lua's one hook per thread with the program.
//
// Lua has a single hook per lua_State. Under call counting ours is on every thread; a hook the
// program sets with debug.sethook (or had set before the run) is kept in a record of that
// thread and called from ours with the event and the untouched lua_Debug, so it sees exactly
// what it would see alone. The records live in a weak-keyed registry table: a record dies with
// its coroutine, and nothing the profiler keeps can name a freed lua_State (a collected
// coroutine's address is soon another object's).
#include <new>

#include "lua_sampler.hpp"

namespace scriptprof::lua {
namespace {

const char kThreadRecordsKey = 0;  // registry: {[thread] = ThreadRecord userdata}, weak keys

}  // namespace

bool push_thread(lua_State* L, lua_State* thread) {
  if (thread == L) {
    lua_pushthread(L);
    return true;
  }
  if (!lua_checkstack(thread, 1)) return false;
  lua_pushthread(thread);
  lua_xmove(thread, L, 1);
  return true;
}

LuaSampler::ThreadRecord* LuaSampler::thread_record(lua_State* L, lua_State* thread, bool create) {
  OwnWork own(*this);
  if (!lua_checkstack(L, 4)) return nullptr;  // a hook always has LUA_MINSTACK slots
  int top = lua_gettop(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kThreadRecordsKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    if (!create) return nullptr;
    lua_createtable(L, 0, 4);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kThreadRecordsKey);
  }
  ThreadRecord* record = nullptr;
  if (push_thread(L, thread)) {
    if (lua_rawget(L, -2) == LUA_TUSERDATA) {
      record = static_cast<ThreadRecord*>(lua_touserdata(L, -1));
    } else if (create && push_thread(L, thread)) {
      record = new (lua_newuserdatauv(L, sizeof(ThreadRecord), 0)) ThreadRecord{};
      lua_rawset(L, -4);
    }
  }
  lua_settop(L, top);
  return record;  // held by the table while the thread lives
}

// Under call counting the program's own hook on `thread`: its events reach it through ours.
HostHook LuaSampler::program_hook(lua_State* L, lua_State* thread) {
  if (!program_hooks_) return {};
  ThreadRecord* record = thread_record(L, thread, false);
  return record ? record->program : HostHook{};
}

// Our counting hook on `thread`, carrying the events and the count of the program's hook there.
void LuaSampler::install_counting_hook(lua_State* L, lua_State* thread) {
  HostHook program = program_hook(L, thread);
  SamplerEngine::ArmMove move(engine_);  // the signal handler keeps off meanwhile
  set_hook(thread, sampler_hook, LUA_MASKCALL | program.mask, program.count);
}

// Our counting hook on `thread`; a hook the program had set there is kept under ours.
void LuaSampler::take_over_hook(lua_State* L, lua_State* thread) {
  lua_Hook hook = lua_gethook(thread);
  if (hook && hook != sampler_hook) {
    if (ThreadRecord* record = thread_record(L, thread, true)) {
      record->program = hook_of(thread);
      note_program_hooks();
    }
  }
  install_counting_hook(L, thread);
}

// At stop: every thread still alive gets back the hook the program set there (the others
// drop our counting hook at their next event, in on_hook, or are gone).
void LuaSampler::restore_thread_hooks(lua_State* L) {
  if (!lua_checkstack(L, 4)) return;
  int top = lua_gettop(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kThreadRecordsKey) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_State* thread = lua_tothread(L, -2);
      auto* record = static_cast<ThreadRecord*>(lua_touserdata(L, -1));
      if (thread && record && lua_gethook(thread) == sampler_hook)
        set_hook(thread, record->program.hook, record->program.mask, record->program.count);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kThreadRecordsKey);
  program_hooks_ = lifted_ = false;
  update_quick_counting();
}

// The stack of L is so near LUAI_MAXSTACK that the call hook of its next call could fail where
// the program alone would not: our counting hook steps aside (calls made there go uncounted)
// until a sample finds room again.
void LuaSampler::lift_counting_hook(lua_State* L) {
  ThreadRecord* record = thread_record(L, L, true);
  if (!record) return;
  record->lifted = true;
  lifted_ = true;
  engine_.profile().health.counting_lifts += 1;
  SamplerEngine::ArmMove move(engine_);
  set_hook(L, record->program.hook, record->program.mask, record->program.count);
}

bool LuaSampler::lifted(lua_State* L, lua_State* thread) {
  if (!lifted_) return false;
  ThreadRecord* record = thread_record(L, thread, false);
  return record && record->lifted;
}

void LuaSampler::relift_counting_hook(lua_State* L) {
  if (!lifted_ || !counting_ || !engine_.active() || !hook_has_room(L)) return;
  ThreadRecord* record = thread_record(L, L, false);
  if (!record || !record->lifted) return;
  record->lifted = false;
  install_counting_hook(L, L);
}

void LuaSampler::set_program_hook(lua_State* L, lua_State* L1, lua_Hook hook, int mask, int count) {
  // Lua work (which may allocate, or raise on memory) comes before the critical section.
  ThreadRecord* record = nullptr;
  if (engine_.active() && counting_) {
    record = thread_record(L, L1, hook != nullptr);
    if (record) record->program = hook ? HostHook{hook, mask, count} : HostHook{};
    if (hook) note_program_hooks();
  }
  SamplerEngine::ArmMove move(engine_);
  bool was_armed = armed_.load() == L1;
  if (was_armed) disarm(false);
  if (engine_.active() && counting_ && !(record && record->lifted)) {
    HostHook program = record ? record->program : HostHook{};
    lua_sethook(L1, sampler_hook, LUA_MASKCALL | program.mask, program.count);
  } else {
    lua_sethook(L1, hook, mask, count);
  }
  // A sample still pending stays armed, over the new hook.
  if (was_armed && engine_.active() && engine_.pending_ticks() > 0) arm(L1);
}

HostHook LuaSampler::program_visible_hook(lua_State* L, lua_State* L1) {
  HostHook recorded = program_hook(L, L1);
  HostHook h;
  {
    SamplerEngine::ArmMove move(engine_);
    h = hook_of(L1);
    if (h.hook == sampler_hook && armed_.load() == L1) h = saved_;
  }
  if (h.hook == sampler_hook) h = recorded;
  return h;
}

// lua_newthread copied the creator's hook into the new thread, as it copies a program's hook:
// the new thread gets what it would have had without the profiler (under ours when counting).
void LuaSampler::fix_inherited_hook(lua_State* creator, lua_State* created) {
  HostHook visible = program_visible_hook(creator, creator);
  if (counting_ && engine_.active()) {
    if (visible.hook) {
      if (ThreadRecord* record = thread_record(creator, created, true)) {
        record->program = visible;
        note_program_hooks();
      }
    }
    install_counting_hook(creator, created);
  } else if (lua_gethook(created) == sampler_hook) {
    set_hook(created, visible.hook, visible.mask, visible.count);
  }
}

// lua_sethook restarted the program's instruction count: put back what was left of it, less
// the instruction this count event stands for. True when the program's own count event falls
// on this instruction, as it would have without the sample (the restart is then right).
bool LuaSampler::restore_countdown(lua_State* L, const HostHook& host, int event) {
  if (!(host.mask & LUA_MASKCOUNT)) return false;
  int* countdown = hook_countdown(L);
  if (!countdown || host.countdown < 0) return false;  // not located: the count restarts
  int left = host.countdown - (event == LUA_HOOKCOUNT ? 1 : 0);
  if (left <= 0) return true;
  if (lua_gethook(L) == host.hook && lua_gethookmask(L) == host.mask) *countdown = left;
  return false;
}

}  // namespace scriptprof::lua
