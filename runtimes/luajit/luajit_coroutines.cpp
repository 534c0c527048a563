// Who resumed the coroutine a sample is taken in, so that its samples sit under its resumer's
// frames. LuaJIT keeps no link from a coroutine to its resumer, but the resumer's own frame
// holds it while it runs: LuaJIT's coroutine.resume keeps the thread as its one argument, and
// a wrap function has it as its upvalue (lib_base.c, and vm_*.dasc's coroutine_resume_wrap).
// At a sample (the profile callback: normal context, every other thread suspended) the chain
// is followed from the thread known to run to the sampled one, through the public API alone.
//
// Where that cannot be verified, coroutine.resume and coroutine.wrap are replaced for the run:
// LuaJIT's own, with the sampler told which coroutine runs and who resumed it. Those keep
// LuaJIT's results and messages (lib_base.c's ffh_resume and coroutine_wrap_aux: "cannot
// resume dead coroutine", and for wrap an error raised again with its caller's position), but
// take the switch off LuaJIT's fast path and out of its traces.
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

// The coroutine T's running frame resumes: LuaJIT's resume (its function object `resume`: a
// fast function has no C function to name it) holding it as its one argument, or a wrap
// function (the one builtin with an upvalue) holding it as its upvalue, with nothing else on
// the stack. T is suspended: the pushes here (room checked without raising) are popped before
// it runs again.
lua_State* resumed_by(lua_State* T, const void* resume) {
  lua_Debug ar;
  if (!resume || !lua_getstack(T, 0, &ar) || !lua_checkstack(T, 2) || !lua_getinfo(T, "f", &ar)) return nullptr;
  lua_State* co = nullptr;
  if (lua_topointer(T, -1) == resume && lua_gettop(T) == 2 && lua_type(T, 1) == LUA_TTHREAD) {
    co = lua_tothread(T, 1);
  } else if (lua_iscfunction(T, -1) && !lua_tocfunction(T, -1) && lua_gettop(T) == 1 && lua_getupvalue(T, -1, 1)) {
    co = lua_tothread(T, -1);
    lua_pop(T, 1);
  }
  lua_pop(T, 1);
  return co && co != T && lua_status(co) == 0 ? co : nullptr;
}

// A probe coroutine's body: whether the probes' resumer (its upvalue) is seen resuming it.
int ask(lua_State* co) {
  auto* outer = static_cast<lua_State*>(lua_touserdata(co, lua_upvalueindex(1)));
  lua_pushboolean(co, resumed_by(outer, lua_touserdata(co, lua_upvalueindex(2))) == co);
  return 1;
}

// Resumes a probe on T through the function at T's index 1 (`resume`, or wrap when `wrap`):
// whether the probe saw itself resumed by T.
bool probe_finds(lua_State* T, const void* resume, bool wrap) {
  lua_settop(T, 1);
  lua_State* co = wrap ? T : lua_newthread(T);  // wrap makes its own
  lua_pushlightuserdata(co, T);
  lua_pushlightuserdata(co, const_cast<void*>(resume));
  lua_pushcclosure(co, ask, 2);
  if (wrap) return lua_pcall(T, 1, 1, 0) == 0 && lua_pcall(T, 0, 1, 0) == 0 && lua_toboolean(T, -1);
  return lua_pcall(T, 1, 2, 0) == 0 && lua_toboolean(T, -2) && lua_toboolean(T, -1);
}

}  // namespace

bool LuaJitSampler::find_resumers(lua_State* L) {
  const int top = lua_gettop(L);
  lua_getglobal(L, "coroutine");
  lua_getfield(L, -1, "resume");
  lua_getfield(L, -2, "wrap");
  const void* resume = lua_topointer(L, -2);
  bool ok = false;
  // LuaJIT's own: fast functions, not C functions of ours or the program's.
  if (lua_iscfunction(L, -2) && !lua_tocfunction(L, -2) && lua_iscfunction(L, -1) && lua_tocfunction(L, -1) != tracked_wrap) {
    lua_State* T = lua_newthread(L);  // the probes' resumer: L's stack stays as it is
    for (int wrap = 0; wrap < 2; ++wrap) {
      lua_settop(T, 0);
      lua_pushvalue(L, wrap ? -2 : -3);
      lua_xmove(L, T, 1);
      ok = probe_finds(T, resume, wrap != 0);
      if (!ok) break;
    }
  }
  resume_object_ = ok ? resume : nullptr;
  lua_settop(L, top);
  return ok;
}

void LuaJitSampler::chain_for_sample(lua_State* L) {
  sample_chain_ = chain_;
  if (!resume_object_ || sample_chain_.index_of(L) != ProcessChain::kNotInChain) return;
  // From the thread told to run, or else the one the sampler was made on (a run started inside
  // a coroutine that has yielded since).
  for (lua_State* from : {static_cast<lua_State*>(chain_.running()), main_}) {
    if (!from) continue;
    sample_chain_ = chain_;
    sample_chain_.run(from);
    lua_State* T = from;
    for (int step = 0; T != L && step < 256; ++step) {
      lua_State* co = resumed_by(T, resume_object_);
      if (!co) break;
      sample_chain_.enter(T, co);
      T = co;
    }
    if (T == L) return;
  }
  sample_chain_ = chain_;  // not found: L's own frames alone
}

void LuaJitSampler::track_coroutines(lua_State* L, bool on) {
  if (on) replace_library_functions(L, "coroutine", kSaved, {{"resume", tracked_resume}, {"wrap", tracked_wrap}});
  else restore_library_functions(L, "coroutine", kSaved);
}

}  // namespace scriptprof::luajit
