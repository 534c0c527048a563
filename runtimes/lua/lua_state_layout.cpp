#include "lua_state_layout.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace scriptprof::lua {
namespace {

// ---- The mirror (lstate.h, lobject.h of Lua 5.2.4, 5.3.x, 5.4.0-5.4.8 and 5.5.0) ------------

struct Slot {                // StackValue (5.4) or TValue: the value, then its type tag; 16 bytes
  const void* value;         // GC object, or the lua_CFunction of a light C function
  unsigned char tt;          // variant tag (5.2, 5.3: the low byte of an int); bit 6: collectable
};

// The leading fields of every release's CallInfo (5.2 to 5.5).
struct CallInfoMirror {
  Slot* func;                // the function's slot
  Slot* top;                 // top for this function
  CallInfoMirror* previous;  // the caller (null for the state's base CallInfo)
  CallInfoMirror* next;
};

// Each release's whole CallInfo, for where it ends (the state embeds one: base_ci) and where its
// call status is.
struct CallInfo54 {  // 5.4.0-5.4.8 (lstate.h)
  CallInfoMirror head;
  void* u[3];  // savedpc/trap/nextraise (Lua) or k/old_errfunc/ctx (C)
  int u2;
  short nresults;
  unsigned short callstatus;  // CIST_C (1 << 1) marks a C function
};
struct CallInfo55 {  // 5.5.0 (lstate.h)
  CallInfoMirror head;
  void* u[3];  // savedpc/trap/nextraargs (Lua) or k/old_errfunc/ctx (C)
  int u2;
  std::uint32_t callstatus;  // CIST_C (1 << 15) marks a C function
};
struct CallInfo53 {  // 5.3.0-5.3.6
  CallInfoMirror head;
  void* u[3];  // base/savedpc (Lua) or k/old_errfunc/ctx (C)
  std::ptrdiff_t extra;
  short nresults;
  unsigned short callstatus;  // CIST_LUA (1 << 1) marks a Lua function
};
struct CallInfo52 {  // 5.2.0-5.2.4
  CallInfoMirror head;
  short nresults;
  unsigned char callstatus;  // CIST_LUA (1 << 0) marks a Lua function
  std::ptrdiff_t extra;
  void* u[4];  // base/savedpc (Lua) or ctx/k/old_errfunc/old_allowhook+status (C)
};

// lua_State as each release lays it out (lstate.h, "struct lua_State"). top, l_G and ci are at
// the same offsets in all (checked below); the rest moves. StkIdRel (5.4.5 on) is a union of
// the pointer and an offset used only while the stack is reallocated: a pointer here.
#define SCRIPTPROF_STATE_HEAD_54                                                 \
  void* next; /* CommonHeader */                                                 \
  unsigned char tt, marked;                                                      \
  unsigned char status;                                                          \
  unsigned char allowhook; /* 0 while a hook runs */                             \
  unsigned short nci;                                                            \
  Slot* top; /* first free slot */                                               \
  void* l_G;                                                                     \
  CallInfo54* ci; /* the running function */
// From base_ci to nCcalls every 5.4 release has the same fields.
#define SCRIPTPROF_STATE_CALLS_54                                                \
  CallInfo54 base_ci; /* the first level (C calling Lua) */                      \
  lua_Hook hook;                                                                 \
  std::ptrdiff_t errfunc;                                                        \
  std::uint32_t nCcalls;
struct State540 {  // 5.4.0: oldpc a pointer, before the stack; stacksize; no tbclist
  SCRIPTPROF_STATE_HEAD_54
  const void* oldpc;
  Slot* stack_last;  // end of the stack (LUA_MINSTACK and EXTRA_STACK stay free)
  Slot* stack;       // stack base
  void *openupval, *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS_54
  int stacksize, basehookcount, hookcount, hookmask;
};
struct State541 {  // 5.4.1: oldpc an index, after nCcalls; stacksize; no tbclist
  SCRIPTPROF_STATE_HEAD_54
  Slot *stack_last, *stack;
  void *openupval, *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS_54
  int oldpc, stacksize, basehookcount, hookcount, hookmask;
};
struct State542 {  // 5.4.2: no stacksize, no tbclist
  SCRIPTPROF_STATE_HEAD_54
  Slot *stack_last, *stack;
  void *openupval, *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS_54
  int oldpc, basehookcount, hookcount, hookmask;
};
struct State543 {  // 5.4.3-5.4.8: tbclist after openupval
  SCRIPTPROF_STATE_HEAD_54
  Slot *stack_last, *stack;
  void* openupval;
  Slot* tbclist;
  void *gclist, *twups, *errorJmp;
  SCRIPTPROF_STATE_CALLS_54
  int oldpc, basehookcount, hookcount, hookmask;
};
#undef SCRIPTPROF_STATE_CALLS_54
#undef SCRIPTPROF_STATE_HEAD_54
struct State55 {  // 5.5.0: allowhook before status; nci an int after oldpc
  void* next;
  unsigned char tt, marked, allowhook, status;
  Slot* top;
  void* l_G;
  CallInfo55* ci;
  Slot *stack_last, *stack;
  void* openupval;
  Slot* tbclist;
  void *gclist, *twups, *errorJmp;
  CallInfo55 base_ci;
  lua_Hook hook;
  std::ptrdiff_t errfunc;
  std::uint32_t nCcalls;
  int oldpc, nci, basehookcount, hookcount, hookmask;
};
struct State53 {  // 5.3.0-5.3.6: allowhook last; lua_sethook moves oldpc
  void* next;
  unsigned char tt, marked;
  unsigned short nci;
  unsigned char status;
  Slot* top;
  void* l_G;
  CallInfo53* ci;
  const void* oldpc;
  Slot *stack_last, *stack;
  void *openupval, *gclist, *twups, *errorJmp;
  CallInfo53 base_ci;
  lua_Hook hook;
  std::ptrdiff_t errfunc;
  int stacksize, basehookcount, hookcount;
  unsigned short nny, nCcalls;
  int hookmask;  // l_signalT
  unsigned char allowhook;
};
struct State52 {  // 5.2.0-5.2.4: a byte for the mask; base_ci last; lua_sethook moves oldpc
  void* next;
  unsigned char tt, marked;
  unsigned char status;
  Slot* top;
  void* l_G;
  CallInfo52* ci;
  const void* oldpc;
  Slot *stack_last, *stack;
  int stacksize;
  unsigned short nny, nCcalls;
  unsigned char hookmask, allowhook;
  int basehookcount, hookcount;
  lua_Hook hook;
  void *openupval, *gclist, *errorJmp;
  std::ptrdiff_t errfunc;
  CallInfo52 base_ci;
};

// Where the fields are, per release range: the one the running Lua matches is chosen at
// verification (every 5.4 reports lua_version 504, and a build serves one of 5.2 to 5.5).
struct StateLayout {
  const char* releases;
  std::size_t stack_last, stack, base_ci, hook, basehookcount, hookcount, hookmask, allowhook;
  std::size_t hookmask_bytes;  // 4, or 1 (5.2's lu_byte)
  std::size_t callstatus;      // in CallInfo
  std::size_t callstatus_bytes;
  unsigned c_bit;              // the call status bit that tells C from Lua
  bool c_bit_means_c;          // 5.4's CIST_C; 5.2 and 5.3 mark Lua functions (CIST_LUA)
  std::size_t oldpc_pointer;   // where lua_sethook moves the line hook's oldpc (5.2, 5.3, 5.4.0); else 0
  bool stack_moves_in_place;   // 5.2-5.4.2 grow a stack by realloc, then fix its pointers
};
#define SCRIPTPROF_LAYOUT(T, CI, name, c_bit, means_c, oldpc_pointer, in_place)                      \
  StateLayout {                                                                                       \
    name, offsetof(T, stack_last), offsetof(T, stack), offsetof(T, base_ci), offsetof(T, hook),       \
        offsetof(T, basehookcount), offsetof(T, hookcount), offsetof(T, hookmask),                    \
        offsetof(T, allowhook), sizeof(T::hookmask), offsetof(CI, callstatus), sizeof(CI::callstatus), \
        c_bit, means_c, oldpc_pointer, in_place                                                       \
  }
// Newest first: the likeliest. A build tries its own release's layouts (every 5.4 release shares
// one ABI, and so on); a build for a release without a mirror keeps to the public API.
#if LUA_VERSION_NUM == 504
constexpr StateLayout kLayouts[] = {
    SCRIPTPROF_LAYOUT(State543, CallInfo54, "5.4.3-5.4.8", 1u << 1, true, 0, false),
    SCRIPTPROF_LAYOUT(State542, CallInfo54, "5.4.2", 1u << 1, true, 0, true),
    SCRIPTPROF_LAYOUT(State541, CallInfo54, "5.4.1", 1u << 1, true, 0, true),
    SCRIPTPROF_LAYOUT(State540, CallInfo54, "5.4.0", 1u << 1, true, offsetof(State540, oldpc), true),
};
constexpr bool kHasMirror = true;
#elif LUA_VERSION_NUM == 503
constexpr StateLayout kLayouts[] = {
    SCRIPTPROF_LAYOUT(State53, CallInfo53, "5.3", 1u << 1, false, offsetof(State53, oldpc), true),
};
constexpr bool kHasMirror = true;
#elif LUA_VERSION_NUM == 502
constexpr StateLayout kLayouts[] = {
    SCRIPTPROF_LAYOUT(State52, CallInfo52, "5.2", 1u << 0, false, offsetof(State52, oldpc), true),
};
constexpr bool kHasMirror = true;
#elif LUA_VERSION_NUM == 505
constexpr StateLayout kLayouts[] = {
    SCRIPTPROF_LAYOUT(State55, CallInfo55, "5.5.0", 1u << 15, true, 0, false),
};
constexpr bool kHasMirror = true;
#else
constexpr StateLayout kLayouts[] = {SCRIPTPROF_LAYOUT(State543, CallInfo54, "none", 0, true, 0, false)};  // never tried
constexpr bool kHasMirror = false;
#endif
#undef SCRIPTPROF_LAYOUT

static_assert(sizeof(void*) == 8 && sizeof(Slot) == 16 && sizeof(CallInfo55) == 64 && sizeof(CallInfo54) == 64 &&
                  sizeof(CallInfo53) == 72 && sizeof(CallInfo52) == 80,
              "the mirror is of the 64-bit layout");
template <typename T>
constexpr bool same_head() {
  return offsetof(T, top) == offsetof(StateStackPrefix, top) && offsetof(T, l_G) == offsetof(StateStackPrefix, l_G) &&
         offsetof(T, ci) == offsetof(StateStackPrefix, ci);
}
static_assert(same_head<State543>() && same_head<State540>() && same_head<State55>() && same_head<State53>() &&
                  same_head<State52>(),
              "top, l_G and ci are where the header's prefix has them in every release");

constexpr unsigned char kLightCFunction = 0x16;  // LUA_VLCF (5.4), LUA_TLCF (5.2, 5.3)
constexpr unsigned char kCClosure = 0x26;        // LUA_VCCL, LUA_TCCL (without the collectable bit)
constexpr unsigned char kTagBits = 0x3f;

std::mutex g_verify_mutex;  // states on several threads may start at once
bool g_tried = false;  // under g_verify_mutex; the answer is g_state_layout_verified
const StateLayout* g_layout = &kLayouts[0];  // the one verified (set before the flag)

bool verified() { return g_state_layout_verified.load(std::memory_order_relaxed); }

// L's fields through the chosen layout: top and ci at the offsets every release shares, the rest
// by the layout's offsets.
template <typename T>
T& field(lua_State* L, std::size_t offset) {
  return *reinterpret_cast<T*>(reinterpret_cast<char*>(L) + offset);
}
Slot* state_top(lua_State* L) { return field<Slot*>(L, offsetof(StateStackPrefix, top)); }
const CallInfoMirror* running_ci(lua_State* L) { return field<const CallInfoMirror*>(L, offsetof(StateStackPrefix, ci)); }
unsigned char allowhook(lua_State* L) { return field<unsigned char>(L, g_layout->allowhook); }
int hookmask(lua_State* L) {
  return g_layout->hookmask_bytes == 1 ? field<unsigned char>(L, g_layout->hookmask) : field<int>(L, g_layout->hookmask);
}
Slot* stack_last(lua_State* L) { return field<Slot*>(L, g_layout->stack_last); }
Slot* stack_base(lua_State* L) { return field<Slot*>(L, g_layout->stack); }
const CallInfoMirror* base_ci(lua_State* L) { return &field<CallInfoMirror>(L, g_layout->base_ci); }
// Whether ci runs a C function, from its call status.
bool is_c(const CallInfoMirror* ci) {
  const char* status = reinterpret_cast<const char*>(ci) + g_layout->callstatus;
  const std::uint32_t bits = g_layout->callstatus_bytes == 1   ? *reinterpret_cast<const std::uint8_t*>(status)
                             : g_layout->callstatus_bytes == 2 ? *reinterpret_cast<const std::uint16_t*>(status)
                                                               : *reinterpret_cast<const std::uint32_t*>(status);
  return ((bits & g_layout->c_bit) != 0) == g_layout->c_bit_means_c;
}

// ---- Verification ------------------------------------------------------------------------------

void probe_hook(lua_State*, lua_Debug*) {}
int g_allowhook_inside = -1;  // the byte as seen from inside a hook (under g_verify_mutex)
void reading_hook(lua_State* L, lua_Debug*) { g_allowhook_inside = allowhook(L); }
int nothing(lua_State*) { return 0; }

bool g_probe_ok = false;  // under g_verify_mutex
int probe(lua_State* L) {
  const CallInfoMirror* here = running_ci(L);
  lua_Debug ar;
  bool ok = lua_getstack(L, 0, &ar) && static_cast<const void*>(here) == frame_of(ar) && is_c(here) &&
            here->func->tt == kLightCFunction && here->func->value == reinterpret_cast<const void*>(&probe);
  // The caller is the Lua chunk layout_agrees calls it from (its status says Lua), then the base
  // CallInfo, whose slot is the stack's base.
  const CallInfoMirror* caller = ok ? here->previous : nullptr;
  ok = caller && !is_c(caller) && caller->previous == base_ci(L) && !caller->previous->previous &&
       caller->previous->func == stack_base(L);
  // top against lua_gettop, before and after pushes; the end of the stack after a check.
  ok = ok && state_top(L) - (here->func + 1) == lua_gettop(L);
  if (ok && lua_checkstack(L, 1000)) {
    lua_pushnil(L);
    lua_pushnil(L);
    ok = state_top(L) - (here->func + 1) == lua_gettop(L) && stack_last(L) - state_top(L) >= 998 &&
         stack_last(L) - stack_base(L) <= LUAI_MAXSTACK;
    lua_pop(L, 2);
  }
  // A C closure's function.
  lua_pushcclosure(L, nothing, 0);  // light
  lua_pushinteger(L, 1);
  lua_pushcclosure(L, nothing, 1);
  ok = ok && (state_top(L) - 1)->tt == (kCClosure | 0x40) && (state_top(L) - 2)->tt == kLightCFunction &&
       (state_top(L) - 2)->value == reinterpret_cast<const void*>(&nothing);
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
         field<int>(L, g_layout->hookcount) == n && hookmask(L) == LUA_MASKCOUNT;
  }
  lua_sethook(L, nullptr, 0, 0);
  if (!ok) return false;
  // allowhook: 1 here, 0 inside a hook. Read inside a C function called under a call hook.
  if (allowhook(L) != 1 || !lua_checkstack(L, 2)) return false;
  g_allowhook_inside = -1;
  lua_sethook(L, reading_hook, LUA_MASKCALL, 0);
  lua_pushcfunction(L, nothing);
  lua_call(L, 0, 0);
  lua_sethook(L, nullptr, 0, 0);
  if (g_allowhook_inside != 0) return false;
  // The call information, inside a C function called from a Lua one.
  g_probe_ok = false;
  if (luaL_loadstring(L, "(...)()") != LUA_OK) return false;
  lua_pushcfunction(L, probe);
  lua_call(L, 1, 0);
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

bool hook_running(lua_State* L) { return verified() && allowhook(L) == 0; }

RunningFrame running_frame(lua_State* L) {
  RunningFrame f;
  if (!verified()) return f;
  const CallInfoMirror* ci = running_ci(L);
  if (ci == nullptr) return f;
  f.known = true;
  f.ci = ci;
  f.c_function = is_c(ci);
  // The slot is read, never followed: while a C function returns, Lua moves its results over
  // its slot before leaving its CallInfo, so value and tag may belong to different values
  // (a C closure's tag with a number's bits). Only a light C function's value is the function
  // itself; the sampler accepts it only if it is a C function it knows.
  const Slot* slot = ci->func;
  if (f.c_function && slot >= stack_base(L) && slot < state_top(L) && (slot->tt & kTagBits) == kLightCFunction)
    f.c_fn = slot->value;
  return f;
}

bool hook_has_room(lua_State* L) {
  if (!verified()) return true;
  if (verified_stack_far_below_limit(L)) return true;
  const CallInfoMirror* ci = running_ci(L);
  if (ci == nullptr) return false;
  std::ptrdiff_t high;
  if (is_c(ci)) {
    // A C function may fill the whole stack it has before the next safe point; growing it past
    // that goes through the allocator, which disarms (stack_block_near_limit).
    high = stack_last(L) - stack_base(L);
  } else {
    // The next safe point is in this frame or in a frame it calls, whose slots begin at most at
    // the highest top seen here (ci->top may be stale while a call is being set up; its caller's
    // is not).
    const Slot* top = state_top(L);
    if (ci->top > top) top = ci->top;
    if (ci->previous && ci->previous->top > top) top = ci->previous->top;
    high = top - stack_base(L);
  }
  return high >= 0 && high + kHookReach <= LUAI_MAXSTACK;
}

bool set_return_hook_from_outside(lua_State* L, lua_Hook hook) {
  lua_Hook* hook_field = &field<lua_Hook>(L, g_layout->hook);
  // The mask is an int, or a byte (5.2): compare-and-swap of its own width either way.
  auto swap_mask = [L](int expected, int desired) {
    if (g_layout->hookmask_bytes == 1) {
      auto want = static_cast<unsigned char>(expected);
      return __atomic_compare_exchange_n(&field<unsigned char>(L, g_layout->hookmask), &want,
                                         static_cast<unsigned char>(desired), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    return __atomic_compare_exchange_n(&field<int>(L, g_layout->hookmask), &expected, desired, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
  };
  lua_Hook none = nullptr;
  if (!__atomic_compare_exchange_n(hook_field, &none, hook, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return false;
  if (swap_mask(0, LUA_MASKRET)) {
    if (__atomic_load_n(hook_field, __ATOMIC_ACQUIRE) == hook) return true;
    // The program's hook came between the two (a null one, clearing): its mask follows, or
    // came already; our events must not stay without a hook.
    swap_mask(LUA_MASKRET, 0);
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
