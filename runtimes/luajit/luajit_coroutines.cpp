// coroutine.resume and coroutine.wrap for a run: LuaJIT's own, with the sampler told which
// coroutine runs and who resumed it, so that a coroutine's samples sit under its resumer's
// frames. LuaJIT has no link from a coroutine to its resumer: the library is the one place
// that knows. The replacements keep LuaJIT's results and messages (lib_base.c's ffh_resume and
// coroutine_wrap_aux: "cannot resume dead coroutine", and for wrap an error raised again with
// its caller's position).
extern "C" {
#include <lauxlib.h>
}

#include "luajit_sampler.hpp"
#include "library_patch.hpp"

namespace scriptprof::luajit {
namespace {

constexpr char kSaved[] = "scriptprof.coroutine";  // registry: the originals, while replaced

// Resumes co with the top `narg` values of L; leaves the results (or the error object) on L.
// Returns false on error. lua_resume never throws, so "leave" always follows "enter".
bool resume(lua_State* L, lua_State* co, int narg) {
  LuaJitSampler* sampler = LuaJitSampler::of(L);
  if (!lua_checkstack(co, narg)) {
    lua_pushliteral(L, "too many arguments to resume");
    return false;
  }
  lua_xmove(L, co, narg);
  if (sampler) sampler->enter_coroutine(L, co);
  const int status = lua_resume(co, narg);
  if (sampler) sampler->leave_coroutine(co, L);
  if (status == 0 || status == LUA_YIELD) {
    const int n = lua_gettop(co);
    luaL_checkstack(L, n + 2, "too many results to resume");
    lua_xmove(co, L, n);
    return true;
  }
  lua_xmove(co, L, 1);
  return false;
}

// What ffh_resume refuses: a coroutine running now (L itself, or one that resumed L), or dead.
const char* refusal(lua_State* L, lua_State* co) {
  LuaJitSampler* sampler = LuaJitSampler::of(L);
  if (co == L || (sampler && sampler->resumes(co))) return "cannot resume running coroutine";
  if (lua_status(co) > LUA_YIELD || (lua_status(co) == 0 && lua_gettop(co) == 0)) return "cannot resume dead coroutine";
  return nullptr;
}

int tracked_resume(lua_State* L) {
  lua_State* co = lua_tothread(L, 1);
  if (!co) return luaL_argerror(L, 1, "coroutine expected");
  if (const char* why = refusal(L, co)) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, why);
    return 2;
  }
  const int narg = lua_gettop(L) - 1;
  const bool ok = resume(L, co, narg);
  lua_pushboolean(L, ok);
  lua_insert(L, 2);  // above the coroutine
  return lua_gettop(L) - 1;
}

int tracked_wrap_aux(lua_State* L) {
  lua_State* co = lua_tothread(L, lua_upvalueindex(1));
  if (const char* why = refusal(L, co)) {
    luaL_where(L, 1);
    lua_pushstring(L, why);
    lua_concat(L, 2);
    return lua_error(L);
  }
  const int base = lua_gettop(L);
  if (resume(L, co, base)) return lua_gettop(L);
  if (lua_type(L, -1) == LUA_TSTRING) {  // raised again in the context of wrap's caller
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
  }
  return lua_error(L);
}

int tracked_wrap(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_State* co = lua_newthread(L);
  lua_pushvalue(L, 1);
  lua_xmove(L, co, 1);
  lua_pushcclosure(L, tracked_wrap_aux, 1);
  return 1;
}

}  // namespace

void LuaJitSampler::track_coroutines(lua_State* L, bool on) {
  if (on) replace_library_functions(L, "coroutine", kSaved, {{"resume", tracked_resume}, {"wrap", tracked_wrap}});
  else restore_library_functions(L, "coroutine", kSaved);
}

}  // namespace scriptprof::luajit
