// Space sampling for the Lua adapter: the allocator tap's run modes (Allegro's space profiler)
// and the GC sentinel (statprof's gcprof). Both only decide *when* to sample; stacks are walked at a
// safe point, like the timer's: the allocator runs in the middle of VM operations (a stack
// being grown, a table being resized), where walking frames or pushing values is not safe.
#include "lua_sampler.hpp"

#include <lauxlib.h>

namespace scriptprof::lua {

namespace {

const char kGcMetaKey = 0;  // its address keys the sentinel's metatable in the registry

// The sentinel's __gc: one call per collection cycle that reached it.
int gc_sentinel_finalizer(lua_State* L) {
  if (LuaSampler* s = LuaSampler::of(L)) s->on_gc_cycle(L);
  return 0;
}

}  // namespace

void LuaSampler::install_space_hooks(lua_State* L) {
  // Always told while a run is active: every arm must hear of a stack growing near its limit;
  // call counting also hears of every function object made, to keep function identities exact
  // (the allocation sampler's frees do the same), and the allocation sampler counts bytes.
  // (A served run that keeps its heap samples allocations: the engine set their interval.)
  tap_->set_mode(engine_.settings().alloc_bytes ? AllocatorTap::Mode::Watch
                 : counting_                    ? AllocatorTap::Mode::Functions
                                                : AllocatorTap::Mode::Guard,
                 stack_moves_in_place());
  if (engine_.needs_gc_cycles()) {
    add_own(gc_sentinel_finalizer);
    new_gc_sentinel(L);
  }
}

void LuaSampler::remove_space_hooks() { tap_->set_mode(AllocatorTap::Mode::Idle); }

void LuaSampler::arm_for_allocation() {
  lua_State* L = running_state();
  if (!L) return;
  // Arm the next safe point, as a tick does; the signal handler keeps off meanwhile. If a hook
  // is already armed, its sample carries these bytes too.
  SamplerEngine::ArmMove move(engine_);
  if (arm_.armed() == nullptr) arm_.arm(L, move.context());
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
  // The run is over: the sentinel lets go.
  if (!engine_.active() || !engine_.needs_gc_cycles()) return;
  const bool nested = in_profiler_;  // a collection inside our own work: not the program's
  OwnWork own(*this);
  engine_.heap_cycle_ended();  // the in-use heap this cycle left, to a profile server
  if (settings_.gc_samples && engine_.sampling() && !nested && !engine_.current_excluded()) {
    engine_.add_gc_cycle();
    // Over the sampling budget, the cycle is carried by the next sample, as ticks are.
    if (!engine_.over_budget()) {
      const SamplerEngine::Sampling sampling(engine_);
      chain_for_sample(L);
      walker_.walk_sample(L, 0);  // the finalizer is one of our own functions: not a frame
      record(sampling, SampleKind::Gc, engine_.take_gc_cycles());
    }
  }
  new_gc_sentinel(L);
  finish_limit();
}

}  // namespace scriptprof::lua
