// Space sampling for the Lua adapter: the allocator wrapper (Allegro's space profiler) and the
// GC sentinel (statprof's gcprof). Both only decide *when* to sample; stacks are walked at a
// safe point, like the timer's: the allocator runs in the middle of VM operations (a stack
// being grown, a table being resized), where walking frames or pushing values is not safe.
#include "lua_sampler.hpp"

#include <cstdlib>

#include <lauxlib.h>


namespace scriptprof::lua {

namespace {

const char kGcMetaKey = 0;  // its address keys the sentinel's metatable in the registry
// Read once at load: the wrapper runs for every allocation of the program.
const std::size_t kStackBlockNearLimit = stack_block_near_limit();

}  // namespace

// The wrapper's ud: what it forwards to, and the sampler while there is one. It outlives the
// sampler when the host wrapped our wrapper in turn (lua_setallocf with lua_getallocf's
// answer): lua_close then still calls through it after the sampler's finalizer ran, so the
// sampler leaves it forwarding only, and it frees itself at the state's very last free (the
// main thread's own block).
struct AllocatorTap {
  LuaSampler* sampler = nullptr;  // null once the sampler is gone
  lua_Alloc host = nullptr;
  void* host_ud = nullptr;
  const void* last_block = nullptr;  // the main state's block: its free ends the state
};

namespace {

// How the wrapper reaches the allocator it wraps. Any host allocator: through its pointer.
struct HostAllocator {
  static void* call(AllocatorTap* t, void* ptr, std::size_t osize, std::size_t nsize) {
    return t->host(t->host_ud, ptr, osize, nsize);
  }
};
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

// The wrapped allocator. It never changes what the program sees: the host allocator's answer
// passes unchanged (a failure stays a failure, and is not counted). `kWatch`: the run counts
// calls or samples allocations, so frees and sizes are watched; otherwise only the stack guard
// is left, the least a run pays per allocation.
template <typename Allocator, bool kWatch>
void* sampling_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* t = static_cast<AllocatorTap*>(ud);
  LuaSampler* s = t->sampler;
  if (!s) {  // the sampler is gone and the host still calls through us: forward only
    void* block = Allocator::call(t, ptr, osize, nsize);
    if (nsize == 0 && ptr && ptr == t->last_block) delete t;  // the state's last call
    return block;
  }
  // A stack growing near LUAI_MAXSTACK (only so large a block can be one) must not meet an
  // armed hook: told before the block exists, so no hook can fire in between. A big string or
  // table is not a stack: its ticks stay (a 20 MB string.rep lost 60% of them).
  if (nsize >= kStackBlockNearLimit) s->on_stack_block(ptr);
  // The running state's stack moved in place (5.4.0-5.4.2): bracketed for the signal handler.
  const bool stack_moves = ptr && nsize > 0 && s->stack_move_begins(ptr);
  const auto old = reinterpret_cast<std::uintptr_t>(ptr);  // a number: the block may be freed
  auto call = [&] {
    void* block = Allocator::call(t, ptr, osize, nsize);
    if (stack_moves) s->stack_move_ends(old, block ? reinterpret_cast<std::uintptr_t>(block) : old);
    return block;
  };
  if (!kWatch) return call();
  // A function object's address may be reused once freed (freeing cannot fail: told first).
  if (nsize == 0 && ptr) s->on_free(ptr);
  void* block = call();
  if (block && nsize > 0) {
    // With no block, osize is the kind of object being made, not a size (Lua manual 4.6).
    // Growing a block allocates the difference; shrinking and freeing allocate nothing.
    std::size_t grown = ptr == nullptr ? nsize : nsize > osize ? nsize - osize : 0;
    if (grown) s->on_alloc(grown);
  }
  return block;
}

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

template <typename Allocator>
lua_Alloc wrapper_for(bool watch) {
  return watch ? sampling_alloc<Allocator, true> : sampling_alloc<Allocator, false>;
}

bool is_wrapper(lua_Alloc f) {
  for (bool watch : {false, true})
    if (f == wrapper_for<HostAllocator>(watch) || f == wrapper_for<StandardAllocator>(watch)) return true;
  return false;
}

// The sentinel's __gc: one call per collection cycle that reached it.
int gc_sentinel_finalizer(lua_State* L) {
  if (LuaSampler* s = LuaSampler::of(L)) s->on_gc_cycle(L);
  return 0;
}

}  // namespace

void LuaSampler::install_space_hooks(lua_State* L) {
  // Always wrapped while a run is active: every arm must hear of a stack growing near its
  // limit; call counting also watches frees to keep function identities exact, and the
  // allocation sampler counts bytes.
  if (!tap_) tap_ = new AllocatorTap;
  if (!tap_in_chain_) {
    tap_->sampler = this;
    tap_->host = lua_getallocf(L, &tap_->host_ud);
    // Lua 5.4's main thread sits LUA_EXTRASPACE bytes into the block lua_newstate allocated.
    tap_->last_block = reinterpret_cast<const char*>(main_) - LUA_EXTRASPACE;
  }
  const bool watch = counting_ || settings_.alloc_bytes;
  lua_setallocf(L, tap_->host == standard_allocator() ? wrapper_for<StandardAllocator>(watch)
                                                      : wrapper_for<HostAllocator>(watch), tap_);
  tap_in_chain_ = true;
  if (settings_.gc_samples) {
    add_own(gc_sentinel_finalizer);
    new_gc_sentinel(L);
  }
}

void LuaSampler::remove_space_hooks(lua_State* L) {
  if (!tap_in_chain_) return;
  void* ud = nullptr;
  // Restored only if nobody wrapped us meanwhile; otherwise the wrapper keeps forwarding (it
  // samples nothing once the run is over).
  if (is_wrapper(lua_getallocf(L, &ud)) && ud == tap_) {
    lua_setallocf(L, tap_->host, tap_->host_ud);
    tap_in_chain_ = false;
  }
}

void LuaSampler::release_allocator_tap() {
  if (!tap_) return;
  if (tap_in_chain_)
    tap_->sampler = nullptr;  // still called through the host's wrapper: it frees itself
  else
    delete tap_;
  tap_ = nullptr;
}

void LuaSampler::arm_for_allocation() {
  lua_State* L = current_.load(std::memory_order_acquire);
  if (!L) return;
  // Arm the next safe point, as a tick does; the signal handler keeps off meanwhile. If a hook
  // is already armed, its sample carries these bytes too.
  bool was_critical = engine_.enter_critical();
  if (armed_.load(std::memory_order_acquire) == nullptr) arm(L);
  engine_.leave_critical(was_critical);
}

// A fresh, unreferenced userdata whose finalizer runs at the end of the next cycle that
// collects it, samples, and makes the next one (about 1% of a cycle's cost, DESIGN.md).
void LuaSampler::new_gc_sentinel(lua_State* L) {
  lua_newuserdatauv(L, 0, 0);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kGcMetaKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, gc_sentinel_finalizer);
    lua_setfield(L, -2, "__gc");
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kGcMetaKey);
  }
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
}

void LuaSampler::on_gc_cycle(lua_State* L) {
  if (!engine_.active() || !settings_.gc_samples) return;  // the run is over: the sentinel lets go
  if (engine_.sampling() && !in_profiler_ && !engine_.current_excluded()) {
    engine_.add_gc_cycle();
    // Over the sampling budget, the cycle is carried by the next sample, as ticks are.
    if (!engine_.over_budget()) {
      in_profiler_ = true;
      engine_.enter_sampling();
      walk_sample(L, 0);  // the finalizer is one of our own functions: not a frame
      record(SampleKind::Gc, engine_.take_gc_cycles());
      engine_.leave_sampling();
      in_profiler_ = false;
    }
  }
  new_gc_sentinel(L);
  finish_limit();
}

}  // namespace scriptprof::lua
