// The running coroutine from the frames that resume it (lua_resume_chain.hpp).
#include "lua_resume_chain.hpp"

#include <atomic>
#include <mutex>

#include "coroutine_tracking.hpp"
#include "lua_state_layout.hpp"

namespace scriptprof::lua {
namespace {

// The release's functions, written once before the flag (release) and read after it (acquire).
ReleaseCoroutineFunctions g_release;
std::atomic<bool> g_verified{false};
std::mutex g_verify_mutex;
bool g_tried = false;  // under g_verify_mutex

// Far more than Lua's C-call limit allows resumers to nest (LUAI_MAXCCALLS, 200).
constexpr int kMaxSteps = 256;

lua_State* resumed_by(lua_State* L, const ReleaseCoroutineFunctions& f) {
  lua_State* co = thread_in_hand(L, f.resume, f.close, f.wrap);
  // Running (or starting) is LUA_OK: one still yielded has not started, and a resumer that is
  // the coroutine itself (5.5's close of the running coroutine) runs no other.
  if (!co || co == L || lua_status(co) != LUA_OK) return nullptr;
  return co;
}

// ---- Verification: probe coroutines that ask who runs ----------------------------------------

struct Probe {
  lua_State* outer = nullptr;  // the thread that resumes the probes
  lua_State* found = nullptr;  // what running_end said from inside
};

int ask(lua_State* co) {
  auto* probe = static_cast<Probe*>(lua_touserdata(co, lua_upvalueindex(1)));
  probe->found = resumed_by(probe->outer, g_release) == co ? co : nullptr;
  return 0;
}

// Resumes, through `resume` on T, a new coroutine whose body is `body` with the probe as its
// upvalue; whether the resume succeeded. The new coroutine is left on T's stack.
bool resume_probe(lua_State* T, Probe* probe, lua_CFunction resume, lua_CFunction body) {
  lua_State* co = lua_newthread(T);
  lua_pushlightuserdata(co, probe);
  lua_pushcclosure(co, body, 1);
  lua_pushcfunction(T, resume);
  lua_pushvalue(T, -2);
  const bool ok = lua_pcall(T, 1, 1, 0) == LUA_OK && lua_toboolean(T, -1);
  lua_pop(T, 1);
  return ok;
}

// Whether the probe's body, run through f (resume, or wrap when `wrap`), saw the coroutine it
// ran in.
bool resumes_found(lua_State* T, Probe* probe, lua_CFunction f, bool wrap) {
  probe->found = nullptr;
  if (wrap) {
    lua_pushcfunction(T, f);
    lua_pushlightuserdata(T, probe);
    lua_pushcclosure(T, ask, 1);
    if (lua_pcall(T, 1, 1, 0) != LUA_OK || lua_pcall(T, 0, 0, 0) != LUA_OK) return false;
  } else if (!resume_probe(T, probe, f, ask)) {
    return false;
  }
  return probe->found != nullptr;
}

#if LUA_VERSION_NUM >= 504
// A coroutine that yields holding a to-be-closed value whose __close asks; closed by `close`.
int yield_holding(lua_State* co) {
  lua_newtable(co);
  lua_newtable(co);
  lua_pushvalue(co, lua_upvalueindex(1));
  lua_pushcclosure(co, ask, 1);
  lua_setfield(co, -2, "__close");
  lua_setmetatable(co, -2);
  lua_toclose(co, -1);
  return lua_yield(co, 0);
}

bool closes_found(lua_State* T, Probe* probe, lua_CFunction resume, lua_CFunction close) {
  probe->found = nullptr;
  if (!resume_probe(T, probe, resume, yield_holding)) return false;  // it yields, nothing closed
  lua_pushcfunction(T, close);
  lua_insert(T, -2);
  if (lua_pcall(T, 1, 1, 0) != LUA_OK || !lua_toboolean(T, -1)) return false;
  lua_pop(T, 1);
  return probe->found != nullptr;
}
#endif

}  // namespace

bool verify_resume_chain(lua_State* L) {
  std::lock_guard<std::mutex> lock(g_verify_mutex);
  if (g_tried) return g_verified.load(std::memory_order_relaxed);
  if (!layout_reads_frames()) return false;  // (asked again once the layout is verified)
  g_tried = true;
  const ReleaseCoroutineFunctions f = release_coroutine_functions(L);
  if (!f.resume || !f.wrap) return false;
  const int top = lua_gettop(L);
  lua_State* T = lua_newthread(L);  // the probes' resumer: L's own stack stays as it is
  Probe probe;
  probe.outer = T;
  // The wrap function: what the release's wrap returns.
  g_release.resume = f.resume;
  g_release.wrap = wrapped_by(T, f.wrap);
  bool ok = g_release.wrap && resumes_found(T, &probe, f.resume, false) && resumes_found(T, &probe, f.wrap, true);
#if LUA_VERSION_NUM >= 504
  // Optional: 5.4.0-5.4.4 run __close handlers with the coroutine's status still "yielded",
  // where no sample is armed anyway; there close is not followed.
  if (ok && f.close) {
    g_release.close = f.close;
    if (!closes_found(T, &probe, f.resume, f.close)) g_release.close = nullptr;
  }
#endif
  lua_settop(L, top);
  if (!ok) g_release = {};
  g_verified.store(ok, std::memory_order_release);
  return ok;
}

lua_CFunction release_wrap_function() {
  return g_verified.load(std::memory_order_acquire) ? g_release.wrap : nullptr;
}

lua_State* running_end(lua_State* L) {
  if (!L || !g_verified.load(std::memory_order_acquire)) return L;
  for (int step = 0; step < kMaxSteps; ++step) {
    lua_State* co = resumed_by(L, g_release);
    if (!co) break;
    L = co;
  }
  return L;
}

void extend_chain(ProcessChain& chain, lua_State* until) {
  if (!g_verified.load(std::memory_order_acquire)) return;
  auto* L = static_cast<lua_State*>(chain.running());
  for (int step = 0; L && L != until && step < kMaxSteps; ++step) {
    lua_State* co = resumed_by(L, g_release);
    if (!co) break;
    chain.enter(L, co);
    L = co;
  }
}

}  // namespace scriptprof::lua
