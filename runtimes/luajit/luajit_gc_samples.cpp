// gcprof on LuaJIT (statprof's gc samples): a stack sample after every garbage collection.
//
// LuaJIT 2.1 finalizes only userdata (Lua 5.1's rule), so the sentinel is an empty userdata
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

int sentinel_gc(lua_State* L) {
  const auto* run = static_cast<const std::uint32_t*>(lua_touserdata(L, 1));
  LuaJitSampler* sampler = LuaJitSampler::of(L);
  if (run && sampler) sampler->on_gc_cycle(L, *run);
  return 0;
}

}  // namespace

void LuaJitSampler::new_gc_sentinel(lua_State* L) {
  if (luaL_newmetatable(L, kSentinelMeta)) {
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_getfield(L, -1, "__gc");
  const void* finalizer = lua_topointer(L, -1);  // never a frame of a sample
  if (std::find(own_.begin(), own_.end(), finalizer) == own_.end()) own_.push_back(finalizer);
  lua_pop(L, 1);
  auto* run = static_cast<std::uint32_t*>(lua_newuserdata(L, sizeof(std::uint32_t)));
  *run = run_number_;
  lua_insert(L, -2);
  lua_setmetatable(L, -2);
  lua_pop(L, 1);  // unreachable: collected, and finalized, by the next cycle
}

void LuaJitSampler::on_gc_cycle(lua_State* L, std::uint32_t run) {
  if (run != run_number_ || !engine_.active() || !engine_.collects(SampleKind::Gc)) return;
  if (engine_.sampling()) {
    engine_.add_gc_cycle();
    if (!engine_.over_budget()) {
      engine_.enter_sampling();
      walk(L);
      engine_.record(SampleKind::Gc, engine_.take_gc_cycles(), process_of(L));
      engine_.leave_sampling();
    }
  }
  new_gc_sentinel(L);
}

}  // namespace scriptprof::luajit
