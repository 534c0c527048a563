#include "lua_state_layout.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>

namespace scriptprof::lua {
namespace {

// ---- The mirror (lstate.h, lobject.h of Lua 5.4.0-5.4.4) --------------------------------------

struct Slot {                // StackValue: a TValue (value, type tag), 16 bytes
  const void* value;         // GC object, or the lua_CFunction of a light C function
  unsigned char tt;          // variant tag; bit 6 marks a collectable value
};

struct CallInfoMirror {
  Slot* func;                // the function's slot
  Slot* top;                 // top for this function
  CallInfoMirror* previous;  // the caller (null for the state's base CallInfo)
  CallInfoMirror* next;
  void* u[3];                // savedpc/trap/nextraise (Lua) or k/old_errfunc/ctx (C)
  int u2;
  short nresults;
  unsigned short callstatus;  // CIST_C marks a C function
};

struct StateMirror {
  void* next;                // CommonHeader
  unsigned char tt, marked;
  unsigned char status;
  unsigned char allowhook;   // 0 while a hook runs
  unsigned short nci;
  Slot* top;                 // first free slot
  void* l_G;
  CallInfoMirror* ci;        // the running function
  Slot* stack_last;          // end of the stack (LUA_MINSTACK and EXTRA_STACK stay free)
  Slot* stack;               // stack base
  void* openupval;
  Slot* tbclist;
  void* gclist;
  void* twups;
  void* errorJmp;
  CallInfoMirror base_ci;    // the first level (C calling Lua)
  lua_Hook hook;
  std::ptrdiff_t errfunc;
  std::uint32_t nCcalls;
  int oldpc;
  int basehookcount;
  int hookcount;             // instructions left before the count hook
  int hookmask;
};

static_assert(sizeof(void*) == 8 && sizeof(Slot) == 16 && sizeof(CallInfoMirror) == 64,
              "the mirror is of the 64-bit layout");
static_assert(offsetof(StateMirror, l_G) == offsetof(StateStackPrefix, l_G) &&
                  offsetof(StateMirror, stack_last) == offsetof(StateStackPrefix, stack_last) &&
                  offsetof(StateMirror, stack) == offsetof(StateStackPrefix, stack),
              "the header's prefix is the mirror's");

constexpr unsigned short kCistC = 1 << 1;    // CIST_C
constexpr unsigned char kLightCFunction = 0x16;  // LUA_VLCF
constexpr unsigned char kCClosure = 0x26;        // LUA_VCCL (without the collectable bit)
constexpr unsigned char kTagBits = 0x3f;

std::mutex g_verify_mutex;  // states on several threads may start at once
bool g_tried = false;  // under g_verify_mutex; the answer is g_state_layout_verified

const StateMirror* mirror(lua_State* L) { return reinterpret_cast<const StateMirror*>(L); }
bool verified() { return g_state_layout_verified.load(std::memory_order_relaxed); }

// ---- Verification ------------------------------------------------------------------------------

void probe_hook(lua_State*, lua_Debug*) {}
int g_allowhook_inside = -1;  // the byte as seen from inside a hook (under g_verify_mutex)
void reading_hook(lua_State* L, lua_Debug*) { g_allowhook_inside = mirror(L)->allowhook; }
int nothing(lua_State*) { return 0; }

bool g_probe_ok = false;  // under g_verify_mutex
int probe(lua_State* L) {
  const StateMirror* s = mirror(L);
  lua_Debug ar;
  bool ok = lua_getstack(L, 0, &ar) && static_cast<const void*>(s->ci) == ar.i_ci &&
            (s->ci->callstatus & kCistC) && s->ci->func->tt == kLightCFunction &&
            s->ci->func->value == reinterpret_cast<const void*>(&probe);
  // The caller is Lua or the base CallInfo; walking down ends at base_ci, whose slot is the base.
  const CallInfoMirror* ci = s->ci;
  while (ok && ci->previous) ci = ci->previous;
  ok = ok && ci == &s->base_ci && ci->func == s->stack;
  // top against lua_gettop, before and after pushes; the end of the stack after a check.
  ok = ok && s->top - (s->ci->func + 1) == lua_gettop(L);
  if (ok && lua_checkstack(L, 1000)) {
    lua_pushnil(L);
    lua_pushnil(L);
    ok = s->top - (s->ci->func + 1) == lua_gettop(L) && s->stack_last - s->top >= 998 &&
         s->stack_last - s->stack <= LUAI_MAXSTACK;
    lua_pop(L, 2);
  }
  // A C closure's function.
  lua_pushcclosure(L, nothing, 0);  // light
  lua_pushinteger(L, 1);
  lua_pushcclosure(L, nothing, 1);
  ok = ok && (s->top - 1)->tt == (kCClosure | 0x40) && (s->top - 2)->tt == kLightCFunction &&
       (s->top - 2)->value == reinterpret_cast<const void*>(&nothing);
  lua_pop(L, 2);
  g_probe_ok = ok;
  return 0;
}

}  // namespace

bool verify_state_layout(lua_State* L) {
  std::lock_guard<std::mutex> lock(g_verify_mutex);
  if (g_tried) return verified();
  g_tried = true;
  const StateMirror* s = mirror(L);
  lua_Hook hook = lua_gethook(L);
  int mask = lua_gethookmask(L), count = lua_gethookcount(L);
  // The hook fields, through lua_sethook.
  bool ok = true;
  for (int n : {12345, 54321}) {
    lua_sethook(L, probe_hook, LUA_MASKCOUNT, n);
    ok = ok && s->hook == probe_hook && s->basehookcount == n && s->hookcount == n &&
         s->hookmask == LUA_MASKCOUNT;
  }
  lua_sethook(L, nullptr, 0, 0);
  // allowhook: 1 here, 0 inside a hook. Read inside a C function called under a call hook.
  ok = ok && s->allowhook == 1;
  if (ok && lua_checkstack(L, 2)) {
    lua_sethook(L, reading_hook, LUA_MASKCALL, 0);
    lua_pushcfunction(L, nothing);
    lua_call(L, 0, 0);
    lua_sethook(L, nullptr, 0, 0);
    ok = g_allowhook_inside == 0;
    // The call information, inside a C function.
    g_probe_ok = false;
    lua_pushcfunction(L, probe);
    lua_call(L, 0, 0);
    ok = ok && g_probe_ok;
  }
  lua_sethook(L, hook, mask, count);
  g_state_layout_verified.store(ok, std::memory_order_relaxed);
  return ok;
}

int* hook_countdown(lua_State* L) {
  if (!verified()) return nullptr;
  return &reinterpret_cast<StateMirror*>(L)->hookcount;
}

bool hook_running(lua_State* L) { return verified() && mirror(L)->allowhook == 0; }

RunningFrame running_frame(lua_State* L) {
  RunningFrame f;
  if (!verified()) return f;
  const StateMirror* s = mirror(L);
  const CallInfoMirror* ci = s->ci;
  if (ci == nullptr) return f;
  f.known = true;
  f.ci = ci;
  f.c_function = (ci->callstatus & kCistC) != 0;
  // The slot is read, never followed: while a C function returns, Lua moves its results over
  // its slot before leaving its CallInfo, so value and tag may belong to different values
  // (a C closure's tag with a number's bits). Only a light C function's value is the function
  // itself; the sampler accepts it only if it is a C function it knows.
  const Slot* slot = ci->func;
  if (f.c_function && slot >= s->stack && slot < s->top && (slot->tt & kTagBits) == kLightCFunction)
    f.c_fn = slot->value;
  return f;
}

bool hook_has_room(lua_State* L) {
  if (!verified()) return true;
  const StateMirror* s = mirror(L);
  if (verified_stack_far_below_limit(L)) return true;
  const CallInfoMirror* ci = s->ci;
  if (ci == nullptr) return false;
  std::ptrdiff_t high;
  if (ci->callstatus & kCistC) {
    // A C function may fill the whole stack it has before the next safe point; growing it past
    // that goes through the allocator, which disarms (stack_block_near_limit).
    high = s->stack_last - s->stack;
  } else {
    // The next safe point is in this frame or in a frame it calls, whose slots begin at most at
    // the highest top seen here (ci->top may be stale while a call is being set up; its caller's
    // is not).
    const Slot* top = s->top;
    if (ci->top > top) top = ci->top;
    if (ci->previous && ci->previous->top > top) top = ci->previous->top;
    high = top - s->stack;
  }
  return high >= 0 && high + kHookReach <= LUAI_MAXSTACK;
}

bool may_be_stack_of(lua_State* L, const void* block) {
  return !verified() || (block != nullptr && block == mirror(L)->stack);
}

std::size_t stack_block_near_limit() {
  return static_cast<std::size_t>(LUAI_MAXSTACK - kHookReach) * sizeof(Slot);
}

}  // namespace scriptprof::lua
