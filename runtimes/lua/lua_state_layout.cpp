#include "lua_state_layout.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "lua_state_mirrors.hpp"

namespace scriptprof::lua {
namespace {

static_assert(offsetof(ClosureHead, body) == offsetof(mirror::CClosureMirror, f) &&
                  offsetof(CClosureHead, upvalue0) == offsetof(mirror::CClosureMirror, upvalue) &&
                  offsetof(CClosureHead, upvalue0_tt) == offsetof(mirror::CClosureMirror, upvalue) + offsetof(mirror::Slot, tt),
              "the closure heads read inline are the mirror's");

using namespace mirror;

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

// A Lua closure's prototype: two closures of one prototype share it, another prototype's
// differs, and it is neither closure itself.
bool lua_body_agrees(lua_State* L) {
  // Each closure holds a fresh upvalue: 5.2 and 5.3 reuse a closure whose upvalues are the same.
  if (luaL_loadstring(L, "local n = {} return function() return n end, function() return n end") != LUA_OK)
    return false;
  lua_pushvalue(L, -1);
  lua_call(L, 0, 2);  // chunk, f, g
  lua_pushvalue(L, -3);
  lua_call(L, 0, 1);  // chunk, f, g, f' (f's prototype, another closure)
  const Slot* f = state_top(L) - 3;
  const Slot* g = state_top(L) - 2;
  const Slot* f2 = state_top(L) - 1;
  const void* body = function_body(f->value, f->tt);
  const bool ok = f->tt == 0x46 && f2->tt == 0x46 && f->value != f2->value && body == function_body(f2->value, f2->tt) &&
                  body != function_body(g->value, g->tt) && body != f->value && body != nullptr;
  lua_pop(L, 4);
  return ok;
}

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
       (state_top(L) - 2)->value == reinterpret_cast<const void*>(&nothing) &&
       function_body((state_top(L) - 1)->value, (state_top(L) - 1)->tt) == reinterpret_cast<const void*>(&nothing) &&
       function_body((state_top(L) - 2)->value, (state_top(L) - 2)->tt) == reinterpret_cast<const void*>(&nothing);
  lua_pop(L, 2);
  ok = ok && lua_checkstack(L, 4) && lua_body_agrees(L);
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
  if (!g_layout->frames) return true;  // 5.1: the hook fields alone
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
  if (!kHasMirror || internals_turned_off()) return false;
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
    g_global_state_offset = g_layout->l_G;
    g_hook_offset = g_layout->hook;
  }
  g_state_layout_verified.store(ok, std::memory_order_release);
  return ok;
}

bool internals_turned_off() {
  const char* v = std::getenv("SCRIPTPROF_LUA_INTERNALS");  // normal context, once per process
  return v && std::strcmp(v, "off") == 0;
}

const char* verified_layout() { return verified() ? g_layout->releases : nullptr; }

int* hook_countdown(lua_State* L) {
  if (!verified()) return nullptr;
  return &field<int>(L, g_layout->hookcount);
}

bool hook_running(lua_State* L) { return verified() && allowhook(L) == 0; }

bool layout_reads_frames() { return verified() && g_layout->frames; }

RunningFrame running_frame(lua_State* L) {
  RunningFrame f;
  if (!layout_reads_frames()) return f;
  const CallInfoMirror* ci = running_ci(L);
  if (ci == nullptr) return f;
  f.known = true;
  f.ci = ci;
  f.none = ci->previous == nullptr;
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

namespace {

// The thread `slot`'s function holds: its first argument (by_argument, also_by_argument), its
// first upvalue (by_upvalue). `exact`: the heights of a call blocked in lua_resume (the
// argument alone, or nothing, on the stack); else a call just made (arguments below top).
lua_State* held_thread(const Slot* slot, const Slot* top, bool exact, lua_CFunction by_argument,
                       lua_CFunction also_by_argument, lua_CFunction by_upvalue) {
  const Slot* held = nullptr;
  if ((exact ? top == slot + 2 : top >= slot + 2) && (slot->tt & kTagBits) == kLightCFunction &&
      slot->value != nullptr &&
      (slot->value == reinterpret_cast<const void*>(by_argument) ||
       slot->value == reinterpret_cast<const void*>(also_by_argument))) {
    held = slot + 1;
  } else if ((!exact || top == slot + 1) && slot->tt == (kCClosure | 0x40) && by_upvalue) {
    const auto* closure = static_cast<const CClosureMirror*>(slot->value);
    if (closure->f == by_upvalue && closure->nupvalues >= 1) held = &closure->upvalue[0];
  }
  if (!held || held->tt != kThread) return nullptr;
  return static_cast<lua_State*>(const_cast<void*>(held->value));
}

}  // namespace

namespace {

// held_thread for the C function running on L, read at the heights `exact` says.
lua_State* held_by_running(lua_State* L, bool exact, lua_CFunction by_argument, lua_CFunction also_by_argument,
                           lua_CFunction by_upvalue) {
  if (!layout_reads_frames()) return nullptr;
  const CallInfoMirror* ci = running_ci(L);
  if (ci == nullptr || !is_c(ci)) return nullptr;
  const Slot* slot = ci->func;
  const Slot* top = state_top(L);  // read before the slots it vouches for
  if (slot < stack_base(L) || slot >= top) return nullptr;
  return held_thread(slot, top, exact, by_argument, also_by_argument, by_upvalue);
}

}  // namespace

lua_State* thread_in_hand(lua_State* L, lua_CFunction by_argument, lua_CFunction also_by_argument,
                          lua_CFunction by_upvalue) {
  return held_by_running(L, true, by_argument, also_by_argument, by_upvalue);
}

lua_State* thread_called(lua_State* L, lua_CFunction by_argument, lua_CFunction also_by_argument,
                         lua_CFunction by_upvalue) {
  return held_by_running(L, false, by_argument, also_by_argument, by_upvalue);
}

bool hook_has_room(lua_State* L) {
  if (!layout_reads_frames()) return true;  // not known; 5.1's stack has no limit a hook could pass
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
