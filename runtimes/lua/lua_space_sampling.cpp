// Space sampling for the Lua adapter: the allocator wrapper (Allegro's space profiler) and the
// GC sentinel (statprof's gcprof). Both only decide *when* to sample; stacks are walked at a
// safe point, like the timer's: the allocator runs in the middle of VM operations (a stack
// being grown, a table being resized), where walking frames or pushing values is not safe.
#include "lua_sampler.hpp"

#include <ctime>

namespace scriptprof::lua {

namespace {

const char kGcMetaKey = 0;  // its address keys the sentinel's metatable in the registry

// The wrapped allocator. It never changes what the program sees: the host allocator's answer
// passes unchanged (a failure stays a failure, and is not counted).
void* sampling_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* s = static_cast<LuaSampler*>(ud);
  // A stack growing near LUAI_MAXSTACK (only so large a block can be one) must not meet an
  // armed hook: told before the block exists, so no hook can fire in between.
  if (nsize >= stack_block_near_limit()) s->on_stack_block();
  void* block = s->host_alloc()(s->host_alloc_ud(), ptr, osize, nsize);
  if (nsize == 0 && ptr) s->on_free(ptr);  // a function object's address may be reused now
  if (block && nsize > 0) {
    // With no block, osize is the kind of object being made, not a size (Lua manual 4.6).
    // Growing a block allocates the difference; shrinking and freeing allocate nothing.
    std::size_t grown = ptr == nullptr ? nsize : nsize > osize ? nsize - osize : 0;
    if (grown) s->on_alloc(grown);
  }
  return block;
}

// The sentinel's __gc: one call per collection cycle that reached it.
int gc_sentinel_finalizer(lua_State* L) {
  if (LuaSampler* s = LuaSampler::of(L)) s->on_gc_cycle(L);
  return 0;
}

}  // namespace

void LuaSampler::install_space_hooks(lua_State* L) {
  // Always wrapped while a run is active: call counting watches frees to keep function
  // identities exact, and every arm must hear of a stack growing near its limit.
  countdown_ = AllocationCountdown(settings_.alloc_bytes, clock_ns(CLOCK_MONOTONIC) ^ reinterpret_cast<std::uintptr_t>(this));
  pending_bytes_ = 0;
  host_alloc_ = lua_getallocf(L, &host_alloc_ud_);
  lua_setallocf(L, sampling_alloc, this);
  if (settings_.gc_samples) {
    add_own(gc_sentinel_finalizer);
    new_gc_sentinel(L);
  }
}

void LuaSampler::remove_space_hooks(lua_State* L) {
  if (!host_alloc_) return;
  void* ud = nullptr;
  // Restored only if nobody wrapped us meanwhile; otherwise the wrapper keeps forwarding (it
  // samples nothing once the run is over).
  if (lua_getallocf(L, &ud) == sampling_alloc && ud == this) {
    lua_setallocf(L, host_alloc_, host_alloc_ud_);
    host_alloc_ = nullptr;
  }
}

void LuaSampler::on_alloc(std::size_t bytes) {
  if (!settings_.alloc_bytes || !sampling_ || in_profiler_ || current_excluded_.load(std::memory_order_relaxed)) return;
  std::uint64_t weight = countdown_.allocate(bytes);
  if (weight == 0) return;
  pending_bytes_ += weight;
  lua_State* L = current_.load(std::memory_order_acquire);
  if (!L) return;
  // Over the sampling budget (deep stacks make walks slow, and growing a deep stack allocates
  // all the time): the bytes wait for the next sample point, which carries them.
  if (over_budget()) return;
  // Arm the next safe point, as a tick does; the signal handler keeps off meanwhile. If a hook
  // is already armed, its sample carries these bytes too.
  bool was_critical = critical_.exchange(true);
  if (armed_.load(std::memory_order_acquire) == nullptr) arm(L);
  critical_ = was_critical;
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
  if (!active_ || !settings_.gc_samples) return;  // the run is over: the sentinel lets go
  if (sampling_ && !in_profiler_ && !current_excluded_.load(std::memory_order_relaxed)) {
    ++pending_gc_;
    // Over the sampling budget, the cycle is carried by the next sample, as ticks are.
    if (!over_budget()) {
      in_profiler_ = true;
      timer_.enter_profiler();
      walk_sample(L, 0);  // the finalizer is one of our own functions: not a frame
      record(SampleKind::Gc, pending_gc_);
      pending_gc_ = 0;
      leave_profiler_within_budget();
      in_profiler_ = false;
    }
  }
  new_gc_sentinel(L);
  finish_limit(L);
}

}  // namespace scriptprof::lua
