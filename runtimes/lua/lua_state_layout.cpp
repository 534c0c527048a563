#include "lua_state_layout.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace scriptprof::lua {
namespace {

// ---- The mirror (lstate.h, lobject.h of Lua 5.4.0-5.4.8) --------------------------------------

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

// lua_State as each 5.4 release lays it out (lstate.h, "struct lua_State"). The fields up to
// `ci` and the CallInfo are the same in all; the rest moved twice. StkIdRel (5.4.5 on) is a
// union of the pointer and an offset used only while the stack is reallocated: a pointer here.
#define SCRIPTPROF_STATE_HEAD                                                    \
  void* next; /* CommonHeader */                                                 \
  unsigned char tt, marked;                                                      \
  unsigned char status;                                                          \
  unsigned char allowhook; /* 0 while a hook runs */                             \
  unsigned short nci;                                                            \
  Slot* top; /* first free slot */                                               \
  void* l_G;                                                                     \
  CallInfoMirror* ci; /* the running function */
struct StateMirrorHead {
  SCRIPTPROF_STATE_HEAD
};
// From base_ci to nCcalls every release has the same fields.
#define SCRIPTPROF_STATE_CALLS                                                   \
  CallInfoMirror base_ci; /* the first level (C calling Lua) */                  \
  lua_Hook hook;                                                                 \
  std::ptrdiff_t errfunc;                                                        \
  std::uint32_t nCcalls;
struct State540 {  // 5.4.0: oldpc a pointer, before the stack; stacksize; no tbclist
  SCRIPTPROF_STATE_HEAD
  const void* oldpc;
  Slot* stack_last;  // end of the stack (LUA_MINSTACK and EXTRA_STACK stay free)
  Slot* stack;       // stack base
  void *openupval, *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS
  int stacksize, basehookcount, hookcount, hookmask;
};
struct State541 {  // 5.4.1: oldpc an index, after nCcalls; stacksize; no tbclist
  SCRIPTPROF_STATE_HEAD
  Slot *stack_last, *stack;
  void *openupval, *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS
  int oldpc, stacksize, basehookcount, hookcount, hookmask;
};
struct State542 {  // 5.4.2: no stacksize, no tbclist
  SCRIPTPROF_STATE_HEAD
  Slot *stack_last, *stack;
  void *openupval, *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS
  int oldpc, basehookcount, hookcount, hookmask;
};
struct State543 {  // 5.4.3-5.4.8: tbclist after openupval
  SCRIPTPROF_STATE_HEAD
  Slot *stack_last, *stack;
  void* openupval;
  Slot* tbclist;
  void *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS
  int oldpc, basehookcount, hookcount, hookmask;
};
#undef SCRIPTPROF_STATE_CALLS
#undef SCRIPTPROF_STATE_HEAD

// Where the fields that moved are, per release range: the one the running Lua matches is
// chosen at verification (every 5.4 reports lua_version 504).
struct StateLayout {
  const char* releases;
  std::size_t stack_last, stack, base_ci, hook, basehookcount, hookcount, hookmask;
  std::size_t oldpc_pointer;  // 5.4.0's lua_sethook moves the line hook's oldpc; else 0
  bool stack_moves_in_place;  // 5.4.0-5.4.2 grow a stack by realloc, then fix its pointers
};
#define SCRIPTPROF_LAYOUT(T, name, oldpc_pointer, in_place)                                         \
  StateLayout {                                                                                     \
    name, offsetof(T, stack_last), offsetof(T, stack), offsetof(T, base_ci), offsetof(T, hook),     \
        offsetof(T, basehookcount), offsetof(T, hookcount), offsetof(T, hookmask), oldpc_pointer,   \
        in_place                                                                                    \
  }
// Newest first: the likeliest. Only a module built against 5.4's headers tries them (every 5.4
// release shares one ABI); a module built for another release has no mirror of its structs
// and keeps to the public API.
#if LUA_VERSION_NUM == 504
constexpr StateLayout kLayouts[] = {
    SCRIPTPROF_LAYOUT(State543, "5.4.3-5.4.8", 0, false),
    SCRIPTPROF_LAYOUT(State542, "5.4.2", 0, true),
    SCRIPTPROF_LAYOUT(State541, "5.4.1", 0, true),
    SCRIPTPROF_LAYOUT(State540, "5.4.0", offsetof(State540, oldpc), true),
};
#else
constexpr StateLayout kLayouts[] = {SCRIPTPROF_LAYOUT(State543, "none", 0, false)};  // never tried
#endif
constexpr bool kHasMirror = LUA_VERSION_NUM == 504;
#undef SCRIPTPROF_LAYOUT

static_assert(sizeof(void*) == 8 && sizeof(Slot) == 16 && sizeof(CallInfoMirror) == 64,
              "the mirror is of the 64-bit layout");
static_assert(offsetof(State543, l_G) == offsetof(StateStackPrefix, l_G) &&
                  offsetof(State543, allowhook) == offsetof(StateStackPrefix, allowhook) &&
                  offsetof(State543, ci) == offsetof(StateStackPrefix, ci),
              "the header's prefix is every release's");

constexpr unsigned short kCistC = 1 << 1;    // CIST_C
constexpr unsigned char kLightCFunction = 0x16;  // LUA_VLCF
constexpr unsigned char kCClosure = 0x26;        // LUA_VCCL (without the collectable bit)
constexpr unsigned char kTagBits = 0x3f;

std::mutex g_verify_mutex;  // states on several threads may start at once
bool g_tried = false;  // under g_verify_mutex; the answer is g_state_layout_verified
const StateLayout* g_layout = &kLayouts[0];  // the one verified (set before the flag)

bool verified() { return g_state_layout_verified.load(std::memory_order_relaxed); }

// L's fields through the chosen layout: the common head as a struct, the rest by offset.
const StateMirrorHead* head(lua_State* L) { return reinterpret_cast<const StateMirrorHead*>(L); }
template <typename T>
T& field(lua_State* L, std::size_t offset) {
  return *reinterpret_cast<T*>(reinterpret_cast<char*>(L) + offset);
}
Slot* stack_last(lua_State* L) { return field<Slot*>(L, g_layout->stack_last); }
Slot* stack_base(lua_State* L) { return field<Slot*>(L, g_layout->stack); }
const CallInfoMirror* base_ci(lua_State* L) { return &field<CallInfoMirror>(L, g_layout->base_ci); }

// ---- Verification ------------------------------------------------------------------------------

void probe_hook(lua_State*, lua_Debug*) {}
int g_allowhook_inside = -1;  // the byte as seen from inside a hook (under g_verify_mutex)
void reading_hook(lua_State* L, lua_Debug*) { g_allowhook_inside = head(L)->allowhook; }
int nothing(lua_State*) { return 0; }

bool g_probe_ok = false;  // under g_verify_mutex
int probe(lua_State* L) {
  const StateMirrorHead* s = head(L);
  lua_Debug ar;
  bool ok = lua_getstack(L, 0, &ar) && static_cast<const void*>(s->ci) == ar.i_ci &&
            (s->ci->callstatus & kCistC) && s->ci->func->tt == kLightCFunction &&
            s->ci->func->value == reinterpret_cast<const void*>(&probe);
  // The caller is Lua or the base CallInfo; walking down ends at base_ci, whose slot is the base.
  const CallInfoMirror* ci = s->ci;
  while (ok && ci->previous) ci = ci->previous;
  ok = ok && ci == base_ci(L) && ci->func == stack_base(L);
  // top against lua_gettop, before and after pushes; the end of the stack after a check.
  ok = ok && s->top - (s->ci->func + 1) == lua_gettop(L);
  if (ok && lua_checkstack(L, 1000)) {
    lua_pushnil(L);
    lua_pushnil(L);
    ok = s->top - (s->ci->func + 1) == lua_gettop(L) && stack_last(L) - s->top >= 998 &&
         stack_last(L) - stack_base(L) <= LUAI_MAXSTACK;
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

// Whether g_layout's fields agree with the public API on L (its hook is set and restored, and
// a probe C function is called).
bool layout_agrees(lua_State* L) {
  // The hook fields, through lua_sethook.
  bool ok = true;
  for (int n : {12345, 54321}) {
    lua_sethook(L, probe_hook, LUA_MASKCOUNT, n);
    ok = ok && field<lua_Hook>(L, g_layout->hook) == probe_hook && field<int>(L, g_layout->basehookcount) == n &&
         field<int>(L, g_layout->hookcount) == n && field<int>(L, g_layout->hookmask) == LUA_MASKCOUNT;
  }
  lua_sethook(L, nullptr, 0, 0);
  if (!ok) return false;
  // allowhook: 1 here, 0 inside a hook. Read inside a C function called under a call hook.
  if (head(L)->allowhook != 1 || !lua_checkstack(L, 2)) return false;
  g_allowhook_inside = -1;
  lua_sethook(L, reading_hook, LUA_MASKCALL, 0);
  lua_pushcfunction(L, nothing);
  lua_call(L, 0, 0);
  lua_sethook(L, nullptr, 0, 0);
  if (g_allowhook_inside != 0) return false;
  // The call information, inside a C function.
  g_probe_ok = false;
  lua_pushcfunction(L, probe);
  lua_call(L, 0, 0);
  return g_probe_ok;
}

}  // namespace

bool verify_state_layout(lua_State* L) {
  std::lock_guard<std::mutex> lock(g_verify_mutex);
  if (g_tried) return verified();
  g_tried = true;
  if (!kHasMirror) return false;
  // On a thread of its own: the program's hooks stay as they are, and its stack is not grown
  // by the probe's thousand slots (the thread is garbage once done).
  lua_State* T = lua_newthread(L);
  bool ok = false;
  for (const StateLayout& layout : kLayouts) {
    g_layout = &layout;
    if ((ok = layout_agrees(T))) break;
  }
  lua_pop(L, 1);
  if (ok) {
    g_stack_bounds.last = g_layout->stack_last;
    g_stack_bounds.base = g_layout->stack;
  }
  g_state_layout_verified.store(ok, std::memory_order_release);
  return ok;
}

const char* verified_layout() { return verified() ? g_layout->releases : nullptr; }

int* hook_countdown(lua_State* L) {
  if (!verified()) return nullptr;
  return &field<int>(L, g_layout->hookcount);
}

bool hook_running(lua_State* L) { return verified() && head(L)->allowhook == 0; }

RunningFrame running_frame(lua_State* L) {
  RunningFrame f;
  if (!verified()) return f;
  const StateMirrorHead* s = head(L);
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
  if (f.c_function && slot >= stack_base(L) && slot < s->top && (slot->tt & kTagBits) == kLightCFunction)
    f.c_fn = slot->value;
  return f;
}

bool hook_has_room(lua_State* L) {
  if (!verified()) return true;
  const StateMirrorHead* s = head(L);
  if (verified_stack_far_below_limit(L)) return true;
  const CallInfoMirror* ci = s->ci;
  if (ci == nullptr) return false;
  std::ptrdiff_t high;
  if (ci->callstatus & kCistC) {
    // A C function may fill the whole stack it has before the next safe point; growing it past
    // that goes through the allocator, which disarms (stack_block_near_limit).
    high = stack_last(L) - stack_base(L);
  } else {
    // The next safe point is in this frame or in a frame it calls, whose slots begin at most at
    // the highest top seen here (ci->top may be stale while a call is being set up; its caller's
    // is not).
    const Slot* top = s->top;
    if (ci->top > top) top = ci->top;
    if (ci->previous && ci->previous->top > top) top = ci->previous->top;
    high = top - stack_base(L);
  }
  return high >= 0 && high + kHookReach <= LUAI_MAXSTACK;
}

bool set_return_hook_from_outside(lua_State* L, lua_Hook hook) {
  lua_Hook* hook_field = &field<lua_Hook>(L, g_layout->hook);
  int* mask_field = &field<int>(L, g_layout->hookmask);
  lua_Hook none = nullptr;
  if (!__atomic_compare_exchange_n(hook_field, &none, hook, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return false;
  int no_events = 0;
  if (__atomic_compare_exchange_n(mask_field, &no_events, LUA_MASKRET, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (__atomic_load_n(hook_field, __ATOMIC_ACQUIRE) == hook) return true;
    // The program's hook came between the two (a null one, clearing): its mask follows, or
    // came already; our events must not stay without a hook.
    int ours = LUA_MASKRET;
    __atomic_compare_exchange_n(mask_field, &ours, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return false;
  }
  // A mask of the program's came first. lua_sethook writes the hook before the mask, so its
  // hook is in place already, unless it was a null one (then ours goes).
  lua_Hook ours = hook;
  __atomic_compare_exchange_n(hook_field, &ours, nullptr, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return false;
}

void set_hook(lua_State* L, lua_Hook hook, int mask, int count) {
  if (!verified() || !g_layout->oldpc_pointer) {
    lua_sethook(L, hook, mask, count);
    return;
  }
  const void* oldpc = field<const void*>(L, g_layout->oldpc_pointer);
  lua_sethook(L, hook, mask, count);
  field<const void*>(L, g_layout->oldpc_pointer) = oldpc;
}

void set_hook_keeping_countdown(lua_State* L, lua_Hook hook, int mask, int count) {
  int* countdown = (mask & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
  const int left = countdown ? *countdown : 0;
  set_hook(L, hook, mask, count);
  if (countdown) *countdown = left;
}

bool stack_moves_in_place() { return verified() && g_layout->stack_moves_in_place; }

const void* stack_block(lua_State* L) { return verified() ? stack_base(L) : nullptr; }

bool may_be_stack_of(lua_State* L, const void* block) {
  return !verified() || (block != nullptr && block == stack_base(L));
}

std::size_t stack_block_near_limit() {
  return static_cast<std::size_t>(LUAI_MAXSTACK - kHookReach) * sizeof(Slot);
}

}  // namespace scriptprof::lua
