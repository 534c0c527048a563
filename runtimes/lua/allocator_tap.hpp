// The profiler's place in a state's allocator chain (lua_Alloc and its ud), from attach to the
// state's end. Blocks Lua makes while the profiler works (its closures, tables, threads, the
// stack slots its hook needs) come from a private arena, not the host's heap: a host whose heap
// is capped at what its program needs runs the same profiled. During a run the tap also tells
// the sampler of stack moves, frees and allocations (Allegro's space profiler).
//
// It outlives the sampler: blocks in its arena are freed by the state later, and a host may
// have wrapped it (lua_setallocf with lua_getallocf's answer). A sampler's tap left at the head
// of the chain is taken back by the next sampler on the state; otherwise it frees itself at the
// state's very last free (the main thread's own block). A host that changes the allocator
// after attach must call through the one it replaces, as Lua's manual shows for wrappers.
#pragma once

#include <atomic>
#include <cstdint>

#include <lua.h>

#include "scriptprof/private_arena.hpp"

namespace scriptprof::lua {

class LuaSampler;

// Brackets the profiler's own work on a state (the flag is AllocatorTap::own_work()): the blocks
// Lua makes meanwhile come from the tap's arena, not the host's heap, and no sample or blocked
// arm lands in it. Never around a call into the program's code.
class OwnWorkScope {
 public:
  explicit OwnWorkScope(std::atomic<bool>& flag) : flag_(flag), was_(flag_.exchange(true)) {}
  ~OwnWorkScope() { flag_.store(was_); }
  OwnWorkScope(const OwnWorkScope&) = delete;
  OwnWorkScope& operator=(const OwnWorkScope&) = delete;

 private:
  std::atomic<bool>& flag_;
  const bool was_;
};

class AllocatorTap {
 public:
  enum class Mode {
    Idle,   // no run: only the arena's blocks are routed
    Guard,      // a run: a stack growing near its limit or moving in place is told to the sampler
    Functions,  // a run counting calls alone: every function object made is told (a new one
                // may sit at a dead one's address)
    Watch,      // a run sampling allocations: every block made and freed, with its size
  };
  // A new block (ptr null) whose osize says it is a function object: a closure (LUA_TFUNCTION,
  // which the manual documents), or a kind the API does not name (a prototype, LUA_TPROTO:
  // above LUA_TTHREAD in 5.2 to 5.5). Strings, tables, userdata, threads and untyped blocks
  // (0) are not.
  static bool function_object(std::size_t osize) { return osize == LUA_TFUNCTION || osize > LUA_TTHREAD; }

  // The tap of `main`'s state for `sampler`, in Idle mode: the one a former sampler left at
  // the head of the chain, or a new one put there.
  static AllocatorTap* attach(lua_State* main, LuaSampler* sampler);
  // True while the sampler does its own work (OwnWorkScope): the sampler's own flag,
  // kept here beside what every allocation reads.
  std::atomic<bool>& own_work() { return own_work_; }
  // The block of the thread armed for a sample (kNoArmedBlock: none), written by the arm: a
  // coroutine may be collected while it waits, suspended, for its safe point, and its free
  // must take the arm back before anything writes to it again (LuaSampler::armed_thread_freed).
  static constexpr std::uintptr_t kNoArmedBlock = 1;  // no block's address, and not null
  std::atomic<std::uintptr_t>& armed_block() { return armed_block_; }
  // `stacks_move_in_place`: this Lua grows a stack with realloc in place (5.2 to 5.4.2), which
  // a run must see of every resized block.
  void set_mode(Mode mode, bool stacks_move_in_place = false) {
    mode_ = mode;
    stacks_move_in_place_ = stacks_move_in_place;
  }
  // The sampler is going: the tap forwards (and routes the arena's blocks) until it is taken
  // back or the state ends.
  void orphan();
  // The main thread of the state, once known (5.1 names none: see attach_sampler): its block's
  // free ends the state.
  void set_main_thread(lua_State* main);
  // The sampler whose tap heads L's allocator chain (null: none, or another allocator heads
  // it): two loads, where the registry's key costs a table lookup. Any thread of the state.
  static LuaSampler* heading_sampler(lua_State* L);
  // Bytes of the state's blocks in the arena (the profiler's objects), as Lua counts them.
  std::size_t arena_bytes() const { return arena_.live_bytes(); }

  // The state's allocator while the tap heads its chain (ud: the tap). `Allocator` says how
  // the wrapped allocator is reached.
  template <typename Allocator>
  static void* allocate(void* ud, void* ptr, std::size_t osize, std::size_t nsize);

 private:
  AllocatorTap(lua_Alloc host, void* host_ud, const void* last_block);
  ~AllocatorTap() = default;
  template <typename Allocator>
  void* watch(void* ptr, std::size_t osize, std::size_t nsize);
  template <typename Allocator>
  void* allocate_watching(void* ptr, std::size_t osize, std::size_t nsize);
  // The host's heap for the program's blocks (inline: nearly every call), else route_ours.
  template <typename Allocator>
  void* route(void* ptr, std::size_t osize, std::size_t nsize, bool own) {
    if (!own && !arena_.owns(ptr)) return Allocator::call(this, ptr, osize, nsize);
    return route_ours<Allocator>(ptr, osize, nsize, own);
  }
  template <typename Allocator>
  void* route_ours(void* ptr, std::size_t osize, std::size_t nsize, bool own);
  template <typename Allocator>
  void* move(void* ptr, std::size_t osize, std::size_t nsize, bool to_arena);

  friend struct HostAllocator;
  Mode mode_ = Mode::Idle;
  bool stacks_move_in_place_ = false;
  LuaSampler* sampler_ = nullptr;                 // null once orphaned
  std::atomic<bool> own_work_{false};
  std::atomic<std::uintptr_t> armed_block_{kNoArmedBlock};
  lua_Alloc host_;
  void* host_ud_;
  const void* last_block_;  // the main state's block: its free ends the state (null: not known)
  PrivateArena arena_;
};

}  // namespace scriptprof::lua
