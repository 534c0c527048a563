// The in-use heap of a served Lua run (/debug/pprof/heap), on a workload whose live memory is
// known by construction: one function keeps 1000 blocks of 1 KB, another allocates as much and
// drops it. Sampled every 4 KiB, a run sees about 220 of the keeper's blocks, so one estimate
// is off by 6% (one standard deviation) by chance alone: the test judges the mean of four runs
// (3%) within 10% of the truth, and each run within 25%.
#include <catch2/catch.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <memory>
#include <string>

#include "lua_attach.hpp"
#include "lua_sampler.hpp"
#include "scriptprof/live_profile.hpp"
#include "scriptprof/run_server.hpp"

using namespace scriptprof;
using namespace scriptprof::lua;

namespace {

const char kWorkload[] = R"(
  kept = {}
  function keeper() for i = 1, 1000 do kept[i] = string.rep("k", 1000) .. i end end
  function dropper() local t = {} for i = 1, 1000 do t[i % 10 + 1] = string.rep("d", 1000) .. i end end
)";

struct SiteBytes {
  double keeper_inuse = 0, dropper_inuse = 0, keeper_alloc = 0, dropper_alloc = 0;
  std::uint64_t cycles = 0;
};

// The estimates of the sites whose stack holds keeper, and dropper, in `heap`.
SiteBytes by_function(const HeapSnapshot& heap, const LiveProfileBuilder& names) {
  SiteBytes out;
  out.cycles = heap.cycles;
  for (const HeapSite& site : heap.sites) {
    bool keeper = false, dropper = false;
    for (FunctionId f : site.frames) {
      keeper = keeper || names.functions().at(f).name == "keeper";
      dropper = dropper || names.functions().at(f).name == "dropper";
    }
    if (keeper) out.keeper_inuse += site.inuse_bytes, out.keeper_alloc += site.alloc_bytes;
    if (dropper) out.dropper_inuse += site.inuse_bytes, out.dropper_alloc += site.alloc_bytes;
  }
  return out;
}

struct ServedState {
  lua_State* L = luaL_newstate();
  LuaSampler* sampler = nullptr;
  std::shared_ptr<LiveFeed> feed = std::make_shared<LiveFeed>();
  LiveProfileBuilder names;

  explicit ServedState(std::uint64_t heap_bytes) {
    luaL_openlibs(L);
    REQUIRE(luaL_dostring(L, kWorkload) == LUA_OK);
    sampler = attach_sampler(L);
    SamplerSettings settings;
    make_served(settings);
    settings.heap = true;
    settings.heap_bytes = heap_bytes;
    std::string error;
    REQUIRE(sampler->start(L, settings, &error));
    REQUIRE(sampler->engine().tracks_heap());
    sampler->engine().set_live_feed(feed);
  }
  ~ServedState() {
    sampler->engine().set_live_feed(nullptr);
    sampler->stop();
    lua_close(L);
  }
  void run(const char* code) {
    if (luaL_dostring(L, code) != LUA_OK) FAIL(lua_tostring(L, -1));
  }
  // Lua's own count of its heap, in bytes.
  double lua_bytes() { return lua_gc(L, LUA_GCCOUNT, 0) * 1024.0 + lua_gc(L, LUA_GCCOUNTB, 0); }
  // The last heap the run published (a GC cycle ended since the last call), by function.
  SiteBytes published() {
    LiveFeed::Batch batch = feed->take();
    names.learn(batch);
    REQUIRE(batch.heap);
    return by_function(*batch.heap, names);
  }
};

}  // namespace

TEST_CASE("The in-use heap shows the keeper within 10% and the dropper near 0, and allocs shows both") {
  double keeper_sum = 0, truth_sum = 0;
  for (int round = 0; round < 4; ++round) {
    ServedState s(4096);
    s.run("collectgarbage()");
    const double before = s.lua_bytes();
    s.run("keeper() dropper() collectgarbage()");
    const double truth = s.lua_bytes() - before;  // what keeper left: its strings and table
    const SiteBytes heap = s.published();
    CAPTURE(round, truth, heap.keeper_inuse, heap.dropper_inuse, heap.keeper_alloc, heap.dropper_alloc);
    CHECK(heap.cycles >= 1);
    CHECK(heap.keeper_inuse > 0.75 * truth);
    CHECK(heap.keeper_inuse < 1.25 * truth);
    CHECK(heap.dropper_inuse < 0.03 * truth);  // its blocks were freed by the cycle
    // Allocated: each allocated about as much as the keeper keeps (the dropper's strings, and
    // string.rep's buffers under both).
    CHECK(heap.keeper_alloc > 0.75 * truth);
    CHECK(heap.dropper_alloc > 0.75 * truth);
    keeper_sum += heap.keeper_inuse;
    truth_sum += truth;

    // Dropped in turn: the next cycle's heap holds nothing of the keeper's, and remembers
    // what it allocated.
    s.run("kept = nil collectgarbage()");
    const SiteBytes after = s.published();
    CHECK(after.keeper_inuse < 0.03 * truth);
    CHECK(after.keeper_alloc == Approx(heap.keeper_alloc));
  }
  CHECK(keeper_sum / truth_sum == Approx(1.0).margin(0.10));
}

TEST_CASE("A served run keeps no heap unless asked, and an unserved run refuses heap = true") {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  LuaSampler* sampler = attach_sampler(L);
  SamplerSettings settings;
  make_served(settings);
  std::string error;
  REQUIRE(sampler->start(L, settings, &error));
  CHECK_FALSE(sampler->engine().tracks_heap());
  CHECK(sampler->engine().settings().alloc_bytes == 0);  // nothing wrapped for it
  sampler->stop();
  SamplerSettings unserved;
  unserved.heap = true;
  CHECK_FALSE(sampler->start(L, unserved, &error));
  CHECK(error.find("served only") != std::string::npos);
  lua_close(L);
}

TEST_CASE("Blocks a realloc moves stay kept at their new address until freed") {
  ServedState s(64);  // nearly every block sampled
  // A table grown a step at a time: its array moves (a realloc) at each doubling.
  s.run("grown = {} function grow() for i = 1, 5000 do grown[i] = i end end grow() collectgarbage()");
  const double kept = [&] {
    double bytes = 0;
    LiveFeed::Batch batch = s.feed->take();
    s.names.learn(batch);
    REQUIRE(batch.heap);
    for (const HeapSite& site : batch.heap->sites)
      for (FunctionId f : site.frames)
        if (s.names.functions().at(f).name == "grow") bytes += site.inuse_bytes;
    return bytes;
  }();
  // The array's last size (5000 values of 16 bytes at least, 8192 slots after doublings), and
  // no more than every size it went through.
  CHECK(kept > 5000 * 16 * 0.5);
  CHECK(kept < 16384 * 16 * 2.0);
  s.run("grown = nil collectgarbage()");
  LiveFeed::Batch batch = s.feed->take();
  REQUIRE(batch.heap);
  double left = 0;
  for (const HeapSite& site : batch.heap->sites) left += site.inuse_bytes;
  CHECK(left < 0.05 * kept);
}
