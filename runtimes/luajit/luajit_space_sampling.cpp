// Space sampling on LuaJIT: the allocator wrapper (Allegro's space profiler: a stack sample
// every `alloc_bytes` allocated on average, at the next safe point) and gcprof (statprof's gc
// samples: a stack sample after every garbage collection).
//
// The wrapper is LuaJIT's own allocator (lua_getallocf) with the bytes counted on the way: it
// never changes what the program sees, and a sample that is due triggers LuaJIT's profiler hook
// as a tick does, so the stack is walked at a safe point, never inside the allocator.
//
// GC: LuaJIT 2.1 finalizes only userdata (Lua 5.1's rule), so the sentinel is an empty userdata
// with a __gc metamethod, unreachable from birth: the collector finalizes it at the end of the
// next cycle, in the thread whose allocation ran that cycle's last step. Its finalizer counts
// the cycle, samples that thread's stack (the code that made the garbage), and makes the next
// sentinel. Each sentinel carries its run's number: one left over from an earlier run fires
// later without sampling or making another.
extern "C" {
#include <lauxlib.h>
}

#include <algorithm>

#include "luajit_sampler.hpp"

namespace scriptprof::luajit {
namespace {

constexpr char kSentinelMeta[] = "scriptprof.gc_sentinel";

void* sampling_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
  auto* s = static_cast<LuaJitSampler*>(ud);
  if (ptr && nsize == 0) s->on_free(ptr);  // a kept block (the in-use heap) goes
  void* block = s->host_alloc()(s->host_alloc_ud(), ptr, osize, nsize);
  // Growing a block allocates the difference; shrinking and freeing allocate nothing; a
  // failure stays a failure and is not counted.
  if (block && nsize > 0) {
    if (ptr && block != ptr) s->on_move(ptr, block);  // (only the old address's value is read)
    const std::size_t grown = ptr == nullptr ? nsize : nsize > osize ? nsize - osize : 0;
    if (grown) s->on_alloc(grown, block);
  }
  return block;
}

int sentinel_gc(lua_State* L) {
  const auto* run = static_cast<const std::uint32_t*>(lua_touserdata(L, 1));
  LuaJitSampler* sampler = LuaJitSampler::of(L);
  if (run && sampler) sampler->on_gc_cycle(L, *run);
  return 0;
}

}  // namespace

void LuaJitSampler::install_allocator(lua_State* L) {
  host_alloc_ = lua_getallocf(L, &host_alloc_ud_);
  lua_setallocf(L, sampling_alloc, this);
}

void LuaJitSampler::remove_allocator(lua_State* L) {
  if (!host_alloc_) return;
  void* ud = nullptr;
  // Put back only if nobody wrapped ours meanwhile; else ours keeps forwarding, counting
  // nothing once the run is over.
  if (lua_getallocf(L, &ud) == sampling_alloc && ud == this) {
    lua_setallocf(L, host_alloc_, host_alloc_ud_);
    host_alloc_ = nullptr;
  }
}

// Normal context, inside the allocator: the next safe point samples, as after a tick.
void LuaJitSampler::arm_for_allocation() {
  SamplerEngine::ArmMove move(engine_);
  tick_arm_.arm_now(move.context());
}

void LuaJitSampler::new_gc_sentinel(lua_State* L) {
  if (luaL_newmetatable(L, kSentinelMeta)) {
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
  }
  // The finalizer is never a frame of a sample.
  functions_.add_own(reinterpret_cast<const void*>(sentinel_gc));
  auto* run = static_cast<std::uint32_t*>(lua_newuserdata(L, sizeof(std::uint32_t)));
  *run = run_number_;
  lua_insert(L, -2);
  lua_setmetatable(L, -2);
  lua_pop(L, 1);  // unreachable: collected, and finalized, by the next cycle
}

void LuaJitSampler::on_gc_cycle(lua_State* L, std::uint32_t run) {
  if (run != run_number_ || !engine_.active() || !engine_.needs_gc_cycles()) return;
  engine_.heap_cycle_ended();  // the in-use heap this cycle left, to a profile server
  if (engine_.collects(SampleKind::Gc) && engine_.sampling() && !in_profiler_) {
    engine_.add_gc_cycle();
    if (!engine_.over_budget()) {
      in_profiler_ = true;
      const SamplerEngine::Sampling sampling(engine_);
      walk(L);
      sampling.record(SampleKind::Gc, engine_.take_gc_cycles(), process_of(L));
      in_profiler_ = false;
    }
  }
  new_gc_sentinel(L);
}

}  // namespace scriptprof::luajit
