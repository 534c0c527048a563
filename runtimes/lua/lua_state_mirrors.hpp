// The mirror of the private structs the Lua adapter reads (lstate.h, lobject.h), one table per
// release range where a field moved: lua_State and CallInfo as each release lays them out
// (64-bit), and where the fields the sampler needs are. Only lua_state_layout.cpp includes it:
// the rest of the adapter asks that file, which verifies the chosen table at attach.
//
// Upstream locations (lstate.h): struct lua_State at line 281 (5.4.0), 306 (5.4.1), 273 (5.4.2),
// 304 (5.4.3), 309 (5.4.6-5.4.8), 285 (5.5.0); struct CallInfo at 169, 193, 160, 172, 177 and
// 187. 5.1.5, 5.2.4 and 5.3.6 are Debian's packages, whose sources are not at hand here: their
// tables are checked against the running interpreter like the others.
#pragma once
extern "C" {
#include <lua.h>
}
#include <cstddef>
#include <cstdint>

#include "lua_state_layout.hpp"

namespace scriptprof::lua::mirror {

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

struct State51 {  // 5.1.5: frames in an array (base_ci points to it); l_G after base; a byte mask
  void* next;
  unsigned char tt, marked, status;
  Slot* top;
  Slot* base;
  void* l_G;
  void* ci;
  const void* savedpc;
  Slot *stack_last, *stack;
  void *end_ci, *base_ci;
  int stacksize, size_ci;
  unsigned short nCcalls, baseCcalls;
  unsigned char hookmask, allowhook;
  int basehookcount, hookcount;
  lua_Hook hook;
};

// Where the fields are, per release range: the one the running Lua matches is chosen at
// verification (every 5.4 reports lua_version 504, and a build serves one of 5.1 to 5.5).
struct StateLayout {
  const char* releases;
  bool frames;                 // the CallInfo fields below are read (5.2 on): else hooks alone
  std::size_t l_G;
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
    name, true, offsetof(T, l_G), offsetof(T, stack_last), offsetof(T, stack), offsetof(T, base_ci),  \
        offsetof(T, hook),                                                                            \
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
#elif LUA_VERSION_NUM == 501
// 5.1's hook fields alone: its frames are an array whose entries have no call status (a C
// function is told by its closure, which a signal handler must not follow), so what runs is
// not read, and 5.1's lua_sethook leaves the line hook's last instruction alone.
constexpr StateLayout kLayouts[] = {
    StateLayout{"5.1", false, offsetof(State51, l_G), offsetof(State51, stack_last), offsetof(State51, stack),
                offsetof(State51, base_ci), offsetof(State51, hook), offsetof(State51, basehookcount),
                offsetof(State51, hookcount), offsetof(State51, hookmask), offsetof(State51, allowhook),
                sizeof(State51::hookmask), 0, 0, 0, false, 0, true},
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
constexpr unsigned char kThread = 0x48;          // LUA_VTHREAD, LUA_TTHREAD, with the collectable bit

// A C closure (lobject.h, "CClosure"), 5.2 to 5.5: the closure header, the function, then its
// upvalues.
struct CClosureMirror {
  void* next;  // CommonHeader
  unsigned char tt, marked;
  unsigned char nupvalues;
  void* gclist;
  lua_CFunction f;
  Slot upvalue[1];
};

}  // namespace scriptprof::lua::mirror
