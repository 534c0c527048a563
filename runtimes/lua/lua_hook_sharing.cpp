// LuaHookSharing (lua_hook_sharing.hpp): the records of the program's hooks, one per thread.
#include "lua_hook_sharing.hpp"

#include <new>

#include "allocator_tap.hpp"
#include "lua_state_layout.hpp"

namespace scriptprof::lua {
namespace {

const char kThreadRecordsKey = 0;  // registry: {[thread] = ThreadRecord userdata}, weak keys

}  // namespace

LuaHookSharing::ThreadRecord* LuaHookSharing::record(lua_State* L, lua_State* thread, bool create) {
  OwnWorkScope own(own_work_);
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

HostHook LuaHookSharing::program_hook(lua_State* L, lua_State* thread) {
  if (!program_hooks_) return {};
  ThreadRecord* r = record(L, thread, false);
  return r ? r->program : HostHook{};
}

void LuaHookSharing::install(lua_State* L, lua_State* thread) {
  HostHook program = program_hook(L, thread);
  SamplerEngine::ArmMove move(engine_);  // the signal handler keeps off meanwhile
  set_hook(thread, sampler_hook, LUA_MASKCALL | program.mask, program.count);
}

bool LuaHookSharing::take_over(lua_State* L, lua_State* thread) {
  lua_Hook hook = lua_gethook(thread);
  bool kept = false;
  if (hook && hook != sampler_hook) {
    if (ThreadRecord* r = record(L, thread, true)) {
      r->program = hook_of(thread);
      program_hooks_ = kept = true;
    }
  }
  install(L, thread);
  return kept;
}

// The others drop our counting hook at their next event (the sampler's on_hook), or are gone.
void LuaHookSharing::restore_all(lua_State* L) {
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
}

void LuaHookSharing::lift(lua_State* L) {
  ThreadRecord* record = this->record(L, L, true);
  if (!record) return;
  record->lifted = true;
  lifted_ = true;
  engine_.profile().health.counting_lifts += 1;
  SamplerEngine::ArmMove move(engine_);
  set_hook(L, record->program.hook, record->program.mask, record->program.count);
}

bool LuaHookSharing::lifted(lua_State* L, lua_State* thread) {
  if (!lifted_) return false;
  ThreadRecord* r = record(L, thread, false);
  return r && r->lifted;
}

void LuaHookSharing::relift(lua_State* L) {
  if (!lifted_ || !hook_has_room(L)) return;
  ThreadRecord* r = record(L, L, false);
  if (!r || !r->lifted) return;
  r->lifted = false;
  install(L, L);
}

}  // namespace scriptprof::lua
