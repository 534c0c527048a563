#include "allocator_tap.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <lauxlib.h>

#include "lua_sampler.hpp"
#include "lua_state_layout.hpp"

namespace scriptprof::lua {

// How the tap reaches the allocator it wraps. Any host allocator: through its pointer.
struct HostAllocator {
  static void* call(AllocatorTap* t, void* ptr, std::size_t osize, std::size_t nsize) {
    return t->host_(t->host_ud_, ptr, osize, nsize);
  }
};

namespace {

// lauxlib's own allocator (luaL_newstate's, the one nearly every host keeps), inlined: its
// contract is the manual's (4.6): free on size 0, else realloc. It saves an indirect call per
// allocation, which was half the wrapper's cost on allocation-heavy code (the methods split).
struct StandardAllocator {
  static void* call(AllocatorTap*, void* ptr, std::size_t, std::size_t nsize) {
    if (nsize == 0) {
      std::free(ptr);
      return nullptr;
    }
    return std::realloc(ptr, nsize);
  }
};

// Read once at load: the tap runs for every allocation of the program.
const std::size_t kStackBlockNearLimit = stack_block_near_limit();

// lauxlib's allocator, as this process's Lua library hands it out (read once, from a state
// made for the purpose: the library keeps it static).
lua_Alloc standard_allocator() {
  static const lua_Alloc standard = [] {
    lua_State* probe = luaL_newstate();
    if (!probe) return lua_Alloc{nullptr};
    lua_Alloc f = lua_getallocf(probe, nullptr);
    lua_close(probe);
    return f;
  }();
  return standard;
}

// The block lua_newstate allocated for the state whose main thread is `main`: up to 5.4 the
// main thread sits LUA_EXTRASPACE bytes into it; 5.5 allocates the global state, which holds it.
const void* first_block_of(lua_State* main) {
#if LUA_VERSION_NUM >= 505
  return global_state_of(main);
#else
  return reinterpret_cast<const char*>(main) - LUA_EXTRASPACE;
#endif
}

}  // namespace

AllocatorTap::AllocatorTap(lua_Alloc host, void* host_ud, const void* last_block)
    : host_(host), host_ud_(host_ud), last_block_(last_block) {}

AllocatorTap* AllocatorTap::attach(lua_State* main, LuaSampler* sampler) {
  void* ud = nullptr;
  const lua_Alloc head = lua_getallocf(main, &ud);
  AllocatorTap* tap = nullptr;
  if ((head == &allocate<StandardAllocator> || head == &allocate<HostAllocator>) &&
      !static_cast<AllocatorTap*>(ud)->sampler_) {
    tap = static_cast<AllocatorTap*>(ud);  // a former sampler's: its arena may hold blocks still
  } else {
    // A 5.1 coroutine standing in for the main thread (attach_sampler) is not it: its state's
    // block is not known until the main thread is seen (set_main_thread).
    tap = new AllocatorTap(head, ud, is_main_thread(main) ? first_block_of(main) : nullptr);
    lua_setallocf(main, head == standard_allocator() ? &allocate<StandardAllocator> : &allocate<HostAllocator>, tap);
  }
  tap->sampler_ = sampler;
  tap->own_work_ = false;
  tap->mode_ = Mode::Idle;
  return tap;
}

void AllocatorTap::set_main_thread(lua_State* main) { last_block_ = first_block_of(main); }

LuaSampler* AllocatorTap::heading_sampler(lua_State* L) {
  void* ud = nullptr;
  const lua_Alloc head = lua_getallocf(L, &ud);
  if (head == &allocate<StandardAllocator> || head == &allocate<HostAllocator>) return static_cast<AllocatorTap*>(ud)->sampler_;
  return nullptr;
}

void AllocatorTap::orphan() {
  mode_ = Mode::Idle;
  own_work_ = false;
  sampler_ = nullptr;
}

// Moves a block between the arena and the host's heap; null (and the block unchanged, as Lua
// expects of a failure) when the other side has no room.
template <typename Allocator>
void* AllocatorTap::move(void* ptr, std::size_t osize, std::size_t nsize, bool to_arena) {
  void* block = to_arena ? arena_.allocate(nsize) : Allocator::call(this, nullptr, 0, nsize);
  if (!block) return nullptr;
  std::memcpy(block, ptr, std::min(osize, nsize));
  if (arena_.owns(ptr))
    arena_.release(ptr, osize);
  else
    Allocator::call(this, ptr, osize, 0);
  return block;
}

// Where a block lives. The program's blocks stay in the host's heap. For the profiler's own
// work (`own`: its code runs, or Lua grows a stack for the sample hook it will call), new and
// growing blocks go to the arena (the host's heap shrinks by a grown block), falling
// back to the host's heap when the arena cannot hold them; an arena block stays there unless
// the program grows it (a table the profiler made and the program fills). A program's
// finalizer run by a collection inside the profiler's work also gets arena blocks: the host
// then has more room, never less.
template <typename Allocator>
__attribute__((noinline)) void* AllocatorTap::route_ours(void* ptr, std::size_t osize, std::size_t nsize, bool own) {
  const bool ours = arena_.owns(ptr);
  if (nsize == 0) {
    if (!ours) return Allocator::call(this, ptr, osize, 0);
    arena_.release(ptr, osize);
    return nullptr;
  }
  if (ours) {
    if (PrivateArena::fits(osize, nsize)) {
      arena_.resized(ptr, osize, nsize);
      return ptr;
    }
    if (nsize < osize) {  // a shrink never fails: kept in place when the arena is full
      void* block = move<Allocator>(ptr, osize, nsize, true);
      if (!block) arena_.resized(ptr, osize, nsize);
      return block ? block : ptr;
    }
    void* block = own ? move<Allocator>(ptr, osize, nsize, true) : nullptr;
    return block ? block : move<Allocator>(ptr, osize, nsize, false);
  }
  if (!ptr) {
    void* block = arena_.allocate(nsize);
    return block ? block : Allocator::call(this, nullptr, osize, nsize);
  }
  void* block = nsize > osize ? move<Allocator>(ptr, osize, nsize, true) : nullptr;
  return block ? block : Allocator::call(this, ptr, osize, nsize);
}

// It never changes what the program sees: the host allocator's answer passes unchanged (a
// failure stays a failure, and is not counted).
template <typename Allocator>
void* AllocatorTap::allocate(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* t = static_cast<AllocatorTap*>(ud);
  // Nearly every call, kept to a few compares around the host's allocator: a block of the
  // program's made, freed (not the arena's, the state's last, or the armed thread's) or resized
  // (not the arena's; no thread armed, whose stack Lua may grow for our hook; no stack moving in
  // place), outside our work, no stack to guard. A new block needs none of the others' compares.
  // (Binary trees resize a table's array at each node: out of line, that was 1.2% of the run.)
  bool program_block = !ptr;
  if (ptr && !t->arena_.owns(ptr)) {  // the armed thread's block is read for these only
    const std::uintptr_t armed = t->armed_block_.load(std::memory_order_relaxed);
    program_block = nsize == 0 ? ptr != t->last_block_ && reinterpret_cast<std::uintptr_t>(ptr) != armed
                               : armed == kNoArmedBlock && !t->stacks_move_in_place_ && t->mode_ < Mode::Watch;
  }
  if (program_block && nsize < kStackBlockNearLimit && !t->own_work_.load(std::memory_order_relaxed)) {
    if (t->mode_ < Mode::Functions || (t->mode_ == Mode::Functions && (ptr || !function_object(osize))))
      return Allocator::call(t, ptr, osize, nsize);
    return t->watch<Allocator>(ptr, osize, nsize);  // a block made or freed (a resize watched is not here)
  }
  return t->allocate_watching<Allocator>(ptr, osize, nsize);
}

// A program's block made or freed in a Watch run, or a function object made in a Functions
// run (out of line: the other modes' path stays short).
template <typename Allocator>
__attribute__((noinline)) void* AllocatorTap::watch(void* ptr, std::size_t osize, std::size_t nsize) {
  if (ptr) {
    sampler_->on_free(ptr);  // a function's address may be reused once freed: told first
    return Allocator::call(this, ptr, osize, 0);
  }
  void* block = Allocator::call(this, nullptr, osize, nsize);
  if (block && mode_ == Mode::Functions) sampler_->on_function_made(reinterpret_cast<std::uintptr_t>(block));
  else if (block) sampler_->on_alloc(nsize, block);
  return block;
}

template <typename Allocator>
__attribute__((noinline)) void* AllocatorTap::allocate_watching(void* ptr, std::size_t osize, std::size_t nsize) {
  const bool working = own_work_.load(std::memory_order_relaxed);
  if (nsize == 0 && ptr && reinterpret_cast<std::uintptr_t>(ptr) == armed_block_.load(std::memory_order_acquire) && sampler_)
    sampler_->armed_thread_freed();
  if (mode_ == Mode::Idle) {
    void* block = route<Allocator>(ptr, osize, nsize, working);
    // The state's last call. A sampler still holding the tap (never destroyed before its state
    // closed) keeps it: a leak, never a dangling pointer.
    if (nsize == 0 && ptr == last_block_ && ptr && !sampler_) delete this;
    return block;
  }
  LuaSampler* s = sampler_;
  // A stack growing near LUAI_MAXSTACK (only so large a block can be one) must not meet an
  // armed hook: told before the block exists, so no hook can fire in between. A big string or
  // table is not a stack: its ticks stay (a 20 MB string.rep lost 60% of them).
  if (nsize >= kStackBlockNearLimit) s->on_stack_block(ptr);
  // The running state's stack moved in place (5.4.0-5.4.2): bracketed for the signal handler.
  const bool stack_moves = ptr && nsize > 0 && s->stack_move_begins(ptr);
  const auto old = reinterpret_cast<std::uintptr_t>(ptr);  // a number: the block may be freed
  const bool own = working || (nsize > osize && ptr && s->armed_stack(ptr));
  auto call = [&] {
    void* block = route<Allocator>(ptr, osize, nsize, own);
    if (stack_moves) s->stack_move_ends(old, block ? reinterpret_cast<std::uintptr_t>(block) : old);
    return block;
  };
  if (mode_ == Mode::Guard) return call();
  if (mode_ == Mode::Functions) {
    void* block = call();
    if (block && !ptr && function_object(osize)) s->on_function_made(reinterpret_cast<std::uintptr_t>(block));
    return block;
  }
  // A function object's address may be reused once freed (freeing cannot fail: told first).
  if (nsize == 0 && ptr) s->on_free(ptr);
  void* block = call();
  if (block && nsize > 0) {
    // With no block, osize is the kind of object being made, not a size (Lua manual 4.6).
    // Growing a block allocates the difference; shrinking and freeing allocate nothing.
    std::size_t grown = ptr == nullptr ? nsize : nsize > osize ? nsize - osize : 0;
    if (ptr && block != ptr) s->on_move(ptr, block);  // (only the old address's value is read)
    if (grown) s->on_alloc(grown, block);
  }
  return block;
}

}  // namespace scriptprof::lua
