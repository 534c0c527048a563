// The Lua hook the sampler sets (sampler_hook) and how it finds its sampler. Under count_calls
// it runs on every call, where Lua's bare hook dispatch already costs about as much as the
// call: finding the sampler must cost a few loads.
//
// Two lookups. The quick one reads L's global state (one field, at the layout verified at
// start) and finds it among the universes of started samplers: no call, no thread-local
// access (in the module a thread-local read is a call to __tls_get_addr). The full one, for
// every event the quick path does not count, asks the registry, through a per-thread
// one-entry cache.
#include <atomic>
#include <mutex>

#include "lua_counting_hook.hpp"
#include "lua_sampler.hpp"
#include "lua_state_layout.hpp"

namespace scriptprof::lua {
namespace {

// Bumped whenever a sampler is made or destroyed, so a cached state -> sampler answer can
// never outlive either.
std::atomic<std::uint64_t> g_sampler_generation{1};

struct SamplerCache {
  lua_State* L = nullptr;
  LuaSampler* sampler = nullptr;
  std::uint64_t generation = 0;
};
thread_local SamplerCache t_sampler_cache;

// Started samplers by their universe's global state. A key is only ever a live universe's:
// a sampler leaves before it is destroyed. Written at start and destruction (under
// g_universe_mutex, rare), read by hooks on any thread (atomics). A thread of another universe
// never matches a key but its own.
constexpr int kUniverses = 8;
std::atomic<const void*> g_universe_keys[kUniverses];
std::atomic<LuaSampler*> g_universe_samplers[kUniverses];
std::mutex g_universe_mutex;

LuaSampler* sampler_of_universe(lua_State* L) {
  const void* g = global_state_of(L);
  for (int i = 0; i < kUniverses; ++i)
    if (g_universe_keys[i].load(std::memory_order_acquire) == g) return g_universe_samplers[i].load(std::memory_order_relaxed);
  return nullptr;
}

// Everything but a counted call found by the quick lookup. Out of line, so that sampler_hook's
// quick path makes no call and saves no registers.
[[gnu::noinline]] void sampler_hook_fully(lua_State* L, lua_Debug* ar) {
  SamplerCache& c = t_sampler_cache;
  std::uint64_t generation = g_sampler_generation.load(std::memory_order_acquire);
  if (c.L != L || c.generation != generation) c = {L, LuaSampler::of(L), generation};
  if (LuaSampler* s = c.sampler)
    s->on_hook(L, ar);
  else
    set_hook(L, nullptr, 0, 0);  // the sampler is gone: leave no trace
}

}  // namespace

void sampler_hook(lua_State* L, lua_Debug* ar) {
  LuaSampler* s = sampler_of_universe(L);
  if (s && s->count_call_quickly(L, ar)) return;
  sampler_hook_fully(L, ar);
}

void samplers_changed() { g_sampler_generation.fetch_add(1, std::memory_order_acq_rel); }

void hook_lookup_enter(LuaSampler* s, lua_State* L) {
  if (!g_state_layout_verified.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_universe_mutex);
  const void* g = global_state_of(L);
  int free = -1;
  for (int i = 0; i < kUniverses; ++i) {
    if (g_universe_samplers[i].load(std::memory_order_relaxed) == s) return;
    if (free < 0 && g_universe_keys[i].load(std::memory_order_relaxed) == nullptr) free = i;
  }
  if (free < 0) return;  // more universes than slots: this one takes the full lookup
  g_universe_samplers[free].store(s, std::memory_order_relaxed);
  g_universe_keys[free].store(g, std::memory_order_release);
}

void hook_lookup_leave(LuaSampler* s) {
  std::lock_guard<std::mutex> lock(g_universe_mutex);
  for (int i = 0; i < kUniverses; ++i) {
    if (g_universe_samplers[i].load(std::memory_order_relaxed) != s) continue;
    g_universe_keys[i].store(nullptr, std::memory_order_release);
    g_universe_samplers[i].store(nullptr, std::memory_order_relaxed);
  }
  samplers_changed();
}

}  // namespace scriptprof::lua
