// The few fields of Lua's private structs (lstate.h, 5.1 to 5.5) that the C API does not expose,
// read at fixed offsets that are verified against the public API once per process.
//
// Why the adapter needs them:
// - A sample arms Lua's hook with a count of 1 and then puts the program's hook back with
//   lua_sethook, which restarts its instruction countdown: the countdown is read and put back.
//   While any hook runs Lua counts the hook function's instructions without calling hooks, so
//   no sample is armed then ("allowhook").
// - Every hook Lua calls first makes sure the stack has LUA_MINSTACK free slots; near
//   LUAI_MAXSTACK that check raises "stack overflow" where the program alone would not have
//   failed. The signal handler reads how high the stack can reach before the next safe point
//   and does not arm when a hook could not get its slots (hook_has_room).
// - A tick that lands in a C function should be charged to it even when it returns before the
//   next safe point: the signal handler notes which C function runs (running_frame).
//
// The mirror has each release's layout (64-bit), one per range where a field moved; the
// one the running Lua agrees with is chosen. If none does, every function here answers
// "unknown" (nullptr, false, RunningFrame::known false), the sampler keeps to what the public
// API allows (counts may drift, C functions are charged to their callers) and says so.
#pragma once
extern "C" {
#include <lua.h>
}
#include "lua_api_compat.hpp"

#include <atomic>
#include <cstddef>

namespace scriptprof::lua {

// Checks the mirrored layouts on L (its hook is set and restored, and a probe C function is
// called). Once per process; true when one release's layout agreed with the public API. False
// without a check when the host turned the reads off (internals_turned_off).
bool verify_state_layout(lua_State* L);
// SCRIPTPROF_LUA_INTERNALS=off in the environment: a host whose Lua is patched in ways a check
// cannot see keeps the profiler to the public API.
bool internals_turned_off();

// The instructions left before L's count hook fires, or nullptr if not verified. A plain int in
// the state: readable and writable from a signal handler on L's own thread.
int* hook_countdown(lua_State* L);

// Whether a hook function is running on L (Lua's allowhook is off). False if not verified.
// A plain byte read: usable from a signal handler on L's own thread.
bool hook_running(lua_State* L);

// What runs on L at this instant, from plain field reads (signal-safe on L's own thread: the
// thread is stopped between two of its instructions, and every pointer read is checked to lie
// in the stack before it is followed).
struct RunningFrame {
  bool known = false;           // layout verified and the fields consistent
  bool c_function = false;      // the running frame is a C function
  const void* c_fn = nullptr;   // the slot's value when it is a light C function: most likely
                                // that function (a returning one may have a result there)
  const void* ci = nullptr;     // its CallInfo
  bool none = false;            // no function runs: L's base CallInfo (the host's own code
                                // between its calls into Lua)
};
RunningFrame running_frame(lua_State* L);

// The coroutine L's running C function holds while that coroutine runs: the first argument of a
// call to `by_argument` or `also_by_argument` (light C functions: coroutine.resume, close) whose
// stack holds that argument alone, or the first upvalue of a C closure of `by_upvalue` (the
// function coroutine.wrap returns) whose stack is empty. Null otherwise, or when the layout is
// not verified. Signal-safe as running_frame: the heights are those of a call blocked in
// lua_resume; a returning call pushes its results above them before any result overwrites the
// slots read, so a slot read at that height is whole and the closure it names is real.
lua_State* thread_in_hand(lua_State* L, lua_CFunction by_argument, lua_CFunction also_by_argument,
                          lua_CFunction by_upvalue);

// The same for the C function a call event of L's hook is about to run (its arguments whole,
// below L's top): the thread that call will resume or close. Normal context (a hook).
lua_State* thread_called(lua_State* L, lua_CFunction by_argument, lua_CFunction also_by_argument,
                         lua_CFunction by_upvalue);

// Whether every hook Lua may call on L before the running frame returns can get its
// LUA_MINSTACK slots without passing LUAI_MAXSTACK, so arming cannot raise "stack overflow".
// True when the layout is not verified (nothing better is known). Signal-safe as above.
bool hook_has_room(lua_State* L);

// How far above the highest slot in use the next hook's check can reach: a new Lua frame
// (function slot, 255 registers) placed above the arguments, then the hook's LUA_MINSTACK slots
// and EXTRA_STACK, with a margin.
constexpr std::ptrdiff_t kExtraStack = 5;  // EXTRA_STACK: slots past stack_last in use at times
constexpr std::ptrdiff_t kHookReach = 1 + 255 + LUA_MINSTACK + kExtraStack + 19;

// lua_State's leading fields as 5.4 has them (top, l_G and ci are there in 5.2 and 5.3 too: the
// mirror in the .cpp checks), and where the chosen release keeps its stack's bounds: all the
// counting hook's per-call room check reads.
struct StateStackPrefix {
  void* next;
  unsigned char tt, marked, status, allowhook;
  unsigned short nci;
  const void* top;
  void* l_G;
  void* ci;
};
struct StackBoundOffsets {
  std::size_t last = 0, base = 0;  // of stack_last and stack in lua_State
};
inline StackBoundOffsets g_stack_bounds;  // set once by verify_state_layout, before the flag
inline std::size_t g_global_state_offset = offsetof(StateStackPrefix, l_G);  // 5.1 moves it
inline std::size_t g_hook_offset = 0;  // of lua_State's hook (set with the above)
inline std::atomic<bool> g_state_layout_verified{false};  // set once (release) by verify_state_layout

// Which releases' layout the running Lua was verified to have ("5.4.3-5.4.8"), or nullptr when
// none agreed and the sampler keeps to the public API.
const char* verified_layout();
// Whether the verified layout includes the frames (5.2 on): 5.1's is its hook fields alone, and
// running_frame then knows nothing.
bool layout_reads_frames();

// L's global state (shared by every thread of its universe), read from the state: the hook's
// quick lookup of its sampler. Meaningful once g_state_layout_verified.
inline const void* global_state_of(lua_State* L) {
  return *reinterpret_cast<void* const*>(reinterpret_cast<const char*>(L) + g_global_state_offset);
}

// What a function value is to the reports, from its stack slot (value, then tag): a Lua
// closure's prototype, a C closure's C function, a light C function itself. Closures of one
// prototype are one function (unless interpret_closures keeps them apart), so call counting
// keys its ids by this: one map entry, in one cache line, for a thousand closures. Every
// closure begins with the same header (lobject.h, 5.2 to 5.5: CommonHeader, nupvalues,
// gclist), then its prototype or C function; the layout check verifies both.
struct ClosureHead {
  void* next;
  unsigned char tt, marked, nupvalues;
  void* gclist;
  const void* body;  // LClosure::p, CClosure::f
};
// A C closure: the header, its function, then its upvalues (values with their tags).
struct CClosureHead {
  ClosureHead head;
  const void* upvalue0;
  unsigned char upvalue0_tt;
};
inline const void* function_body(const void* slot_value, unsigned char tag) {
  constexpr unsigned char kLuaClosure = 0x06, kCClosure = 0x26;  // LUA_VLCL, LUA_VCCL (5.2, 5.3: LUA_TLCL, LUA_TCCL)
  const unsigned char variant = tag & 0x3f;
  return variant == kLuaClosure || variant == kCClosure ? static_cast<const ClosureHead*>(slot_value)->body
                                                        : slot_value;
}

// L's hook, read from its field: the counting hook's test of a thread about to be resumed.
// Only once g_state_layout_verified (acquire).
inline lua_Hook hook_field(const lua_State* L) {
  return *reinterpret_cast<const lua_Hook*>(reinterpret_cast<const char*>(L) + g_hook_offset);
}

// hook_has_room's answer for nearly every stack, inline for the counting hook (every call):
// true when L's stack, even filled to its end, leaves any hook its slots. False when the
// stack is that large: ask hook_has_room. Only once g_state_layout_verified (acquire).
inline bool verified_stack_far_below_limit(lua_State* L) {
  constexpr std::ptrdiff_t kSlot = 16;  // a StackValue, 64-bit
  const char* state = reinterpret_cast<const char*>(L);
  const char* last = *reinterpret_cast<const char* const*>(state + g_stack_bounds.last);
  const char* base = *reinterpret_cast<const char* const*>(state + g_stack_bounds.base);
  return last - base <= (LUAI_MAXSTACK - kExtraStack - kHookReach) * kSlot;
}

// Sets L's hook to `hook` on return events alone by writing the two fields, without
// lua_sethook's walk over L's frames (settraps): for the timer's thread while L's own thread is
// blocked in the kernel, when no other thread may touch L's stack. A return needs no trap: Lua
// reads the mask at every return, of a C function (luaD_poscall) as of a Lua one. The hook is
// written before the mask (a reader that sees the mask sees the hook); both are fields the Lua
// core declares volatile for writes from outside the running code.
// Each field is written only while empty (compare-and-swap): a thread that wakes and calls
// lua_sethook meanwhile keeps its hook and mask whole, and this returns false (nothing of ours
// is left). Only once g_state_layout_verified (acquire).
bool set_return_hook_from_outside(lua_State* L, lua_Hook hook);

// lua_sethook, leaving what the program's line hook sees as it was: lua_sethook (5.2, 5.3 and
// 5.4.0) also sets the "last traced instruction" that decides the next line event. Signal-safe (as
// lua_sethook is, and field writes on L's own thread). For every hook the sampler sets itself;
// a program's own debug.sethook goes through lua_sethook, as unprofiled.
void set_hook(lua_State* L, lua_Hook hook, int mask, int count);
// set_hook, and when `mask` counts instructions, the countdown left where it was (lua_sethook
// restarts it): a program's count hook that goes on under ours, or comes back from under it.
void set_hook_keeping_countdown(lua_State* L, lua_Hook hook, int mask, int count);

// Whether the running release grows a stack by realloc and corrects the pointers into it
// afterwards (5.2-5.4.2), leaving them pointing into the freed block in between.
bool stack_moves_in_place();

// L's stack block (its base), or nullptr when the layout is not verified. Signal-safe.
const void* stack_block(lua_State* L);

// Whether reallocating `block` may be growing L's stack: only its own block is (a stack grows
// by reallocating; a new one starts small). True when the layout is not verified.
bool may_be_stack_of(lua_State* L, const void* block);

// Bytes of a stack block big enough that, once the stack has it, a hook could pass the limit:
// the allocator wrapper disarms when a block this large is allocated during an armed sample.
std::size_t stack_block_near_limit();

}  // namespace scriptprof::lua
