// LuaJitHookSharing (luajit_hook_sharing.hpp), and the debug library's stand-ins it installs.
#include "luajit_hook_sharing.hpp"

#include "library_patch.hpp"
#include "luajit_sampler.hpp"

namespace scriptprof::luajit {
namespace {

const char kSaved[] = "scriptprof.debug_hooks";

int event_mask(int event) {
  switch (event) {
    case LUA_HOOKCALL: return LUA_MASKCALL;
    case LUA_HOOKRET:
    case LUA_HOOKTAILRET: return LUA_MASKRET;
    case LUA_HOOKLINE: return LUA_MASKLINE;
    default: return LUA_MASKCOUNT;
  }
}

void shared_hook(lua_State* L, lua_Debug* ar) {
  if (LuaJitSampler* s = LuaJitSampler::of(L)) s->on_shared_hook(L, ar);
}

// The same through lua_call, for a library function that is not a C function.
int call_original_as_call(lua_State* L, const char* name) {
  const int n = lua_gettop(L);
  push_original_function(L, kSaved, name);
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  return lua_gettop(L);
}

// Calls the library's own function `name` with this call's arguments, returning its results.
// A C function is called in this frame, so no call or return event is added for a program's
// hook to see.
int call_original(lua_State* L, const char* name) {
  push_original_function(L, kSaved, name);
  lua_CFunction f = lua_tocfunction(L, -1);
  lua_pop(L, 1);
  if (f) return f(L);
  return call_original_as_call(L, name);
}

// During a run, debug.sethook is a HookWrite: no trigger lands in LuaJIT's dispatch update.
// While calls are counted, the library's own functions run with no hook at all, so that their
// calls fire no event the program's hook would not have seen from the library alone.
int shared_sethook(lua_State* L) {
  LuaJitSampler* s = LuaJitSampler::of(L);
  if (!s) return call_original(L, "sethook");
  LuaJitSampler::HookWrite writing(*s);
  if (!s->sharing_hook()) return call_original(L, "sethook");
  lua_sethook(L, nullptr, 0, 0);
  const int results = call_original(L, "sethook");  // checks the arguments, stores the function
  s->hook_sharing().program_set(L);
  return results;
}

int shared_gethook(lua_State* L) {
  LuaJitSampler* s = LuaJitSampler::of(L);
  if (!s || !s->sharing_hook()) return call_original(L, "gethook");
  LuaJitSampler::HookWrite writing(*s);
  lua_sethook(L, nullptr, 0, 0);  // with no hook, the library answers the function it stored
  call_original(L, "gethook");    // function, mask, count: it raises no error
  s->hook_sharing().answer_program(L);  // the program's hook, mask and count in their place
  return 3;
}

}  // namespace

bool LuaJitHookSharing::lift_if_deep(lua_State* L, const lua_Debug* ar) {
  if (ar->i_ci <= kLiftDepth) return false;
  HookWriteScope writing(hook_writes_);
  lua_sethook(L, program_hook_, program_mask_, program_count_);
  lifted_ = true;
  engine_.profile().health.counting_lifts += 1;
  return true;
}

void LuaJitHookSharing::pass_to_program(lua_State* L, lua_Debug* ar) const {
  if (program_hook_ && (program_mask_ & event_mask(ar->event))) program_hook_(L, ar);
}

void LuaJitHookSharing::share(lua_State* L, bool on) {
  if (on) {
    program_hook_ = lua_gethook(L);
    program_mask_ = lua_gethookmask(L);
    program_count_ = lua_gethookcount(L);
    lifted_ = false;
    install(L);
    replace_library_functions(L, "debug", kSaved, {{"sethook", shared_sethook}, {"gethook", shared_gethook}});
  } else {
    restore_library_functions(L, "debug", kSaved);
    lua_sethook(L, program_hook_, program_mask_, program_count_);
    program_hook_ = nullptr;
  }
}

void LuaJitHookSharing::guard_sethook(lua_State* L, bool on) {
  if (on) replace_library_functions(L, "debug", kSaved, {{"sethook", shared_sethook}});
  else restore_library_functions(L, "debug", kSaved);
}

void LuaJitHookSharing::install(lua_State* L) {
  HookWriteScope writing(hook_writes_);
  if (lifted_) lua_sethook(L, program_hook_, program_mask_, program_count_);
  else lua_sethook(L, shared_hook, program_mask_ | LUA_MASKCALL, program_count_);
}

void LuaJitHookSharing::relift_if_shallow(lua_State* L) {
  lua_Debug ar;
  if (!lifted_ || !lua_getstack(L, 0, &ar) || ar.i_ci > kLiftDepth / 2) return;
  lifted_ = false;
  install(L);
}

void LuaJitHookSharing::program_set(lua_State* L) {
  program_hook_ = lua_gethook(L);
  program_mask_ = lua_gethookmask(L);
  program_count_ = lua_gethookcount(L);
  install(L);
}

void LuaJitHookSharing::answer_program(lua_State* L) {
  // As LuaJIT's debug.gethook: the stored function, or "external hook" for a C hook.
  lua_settop(L, lua_gettop(L) - 2);
  if (program_hook_ && !lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "external hook");
  }
  char mask[4];
  int i = 0;
  if (program_mask_ & LUA_MASKCALL) mask[i++] = 'c';
  if (program_mask_ & LUA_MASKRET) mask[i++] = 'r';
  if (program_mask_ & LUA_MASKLINE) mask[i++] = 'l';
  mask[i] = '\0';
  lua_pushstring(L, mask);
  lua_pushinteger(L, program_count_);
  install(L);
}

}  // namespace scriptprof::luajit
