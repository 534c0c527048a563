#include "lua_hook_fields.hpp"

#include <atomic>
#include <cstring>
#include <mutex>

namespace scriptprof::lua {
namespace {

// Offsets in struct lua_State, or -1 when not located (0: not tried yet). In Lua 5.4,
// `hookcount` follows { hook, errfunc, nCcalls, oldpc, basehookcount }, and `allowhook` is the
// byte after { next, tt, marked, status }.
// Found once under a mutex (states on several threads may start at once); read as lock-free
// atomics, also from the signal handler.
std::mutex g_locate_mutex;
std::atomic<long> g_countdown_at{0};
std::atomic<long> g_allowhook_at{-1};
constexpr long kAllowHookAt = sizeof(void*) + 3;

// The main thread lives inside the global state's allocation (LG), so the bytes read here,
// well within it, belong to the allocation whatever their layout.
constexpr long kScanBytes = 256;
constexpr long kBaseFromHook = 24;  // hook (8), errfunc (8), nCcalls (4), oldpc (4)

void probe_hook(lua_State*, lua_Debug*) {}

int g_allowhook_inside = -1;  // the byte as seen from inside a hook
void reading_hook(lua_State* L, lua_Debug*) {
  g_allowhook_inside = reinterpret_cast<const unsigned char*>(L)[kAllowHookAt];
}
int nothing(lua_State*) { return 0; }

bool counts_at(const unsigned char* base, long hook_at, int expected) {
  int basecount, count;
  std::memcpy(&basecount, base + hook_at + kBaseFromHook, sizeof basecount);
  std::memcpy(&count, base + hook_at + kBaseFromHook + 4, sizeof count);
  return basecount == expected && count == expected;
}

}  // namespace

bool locate_hook_fields(lua_State* L) {
  std::lock_guard<std::mutex> lock(g_locate_mutex);
  if (g_countdown_at.load() != 0) return g_countdown_at.load() > 0;
  g_countdown_at = -1;
  lua_State* main = L;
  if (lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD) == LUA_TTHREAD) main = lua_tothread(L, -1);
  lua_pop(L, 1);
  lua_Hook hook = lua_gethook(main), hook_L = lua_gethook(L);
  int mask = lua_gethookmask(main), count = lua_gethookcount(main);
  int mask_L = lua_gethookmask(L), count_L = lua_gethookcount(L);

  const auto* base = reinterpret_cast<const unsigned char*>(main);
  lua_sethook(main, probe_hook, LUA_MASKCOUNT, 12345);
  long found = -1;
  for (long at = 0; at + kBaseFromHook + 8 <= kScanBytes; at += sizeof(void*)) {
    lua_Hook h;
    std::memcpy(&h, base + at, sizeof h);
    if (h == probe_hook && counts_at(base, at, 12345)) {
      found = at;
      break;
    }
  }
  if (found >= 0) {
    lua_sethook(main, probe_hook, LUA_MASKCOUNT, 54321);
    if (counts_at(base, found, 54321)) g_countdown_at = found + kBaseFromHook + 4;
  }
  // allowhook: 1 here, 0 inside a hook. Probed on L, the running thread (a call needs it).
  if (base[kAllowHookAt] == 1 && reinterpret_cast<const unsigned char*>(L)[kAllowHookAt] == 1) {
    lua_sethook(L, reading_hook, LUA_MASKCALL, 0);
    lua_pushcfunction(L, nothing);
    lua_call(L, 0, 0);
    lua_sethook(L, nullptr, 0, 0);
    if (g_allowhook_inside == 0) g_allowhook_at = kAllowHookAt;
  }
  lua_sethook(main, hook, mask, count);
  if (L != main) lua_sethook(L, hook_L, mask_L, count_L);
  return g_countdown_at > 0;
}

int* hook_countdown(lua_State* L) {
  long at = g_countdown_at.load(std::memory_order_relaxed);
  if (at <= 0) return nullptr;
  return reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(L) + at);
}

bool hook_running(lua_State* L) {
  long at = g_allowhook_at.load(std::memory_order_relaxed);
  return at > 0 && reinterpret_cast<const unsigned char*>(L)[at] == 0;
}

}  // namespace scriptprof::lua
