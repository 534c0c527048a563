// A host program in C++: scriptprof::Profiler, SCRIPTPROF_ZONE around the script call, and the
// core profile read directly. Exit status 0 only when a sample shows update under the zone.
#include <cstdio>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <scriptprof/native/zones.hpp>
#include <scriptprof/profile_io.hpp>
#include <scriptprof/profiler.hpp>

int main() {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_dostring(L, "function update(n) local t = {} for i = 1, n do t[i % 64] = tostring(i) end end") != LUA_OK)
    return 1;

  scriptprof::ProfilerOptions options;
  options.period_ns = 1'000'000;  // 1 kHz
  scriptprof::Profiler profiler(options);
  std::string error;
  if (!profiler.attach(L, &error) || !profiler.start(L, &error)) {
    std::fprintf(stderr, "host: %s\n", error.c_str());
    return 1;
  }
  {
    SCRIPTPROF_ZONE("game_update");
    lua_getglobal(L, "update");
    lua_pushinteger(L, 2000000);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) return 1;
  }
  scriptprof::Profile profile;
  if (!profiler.stop(L, &error) || !profiler.take_profile(&profile, &error)) {
    std::fprintf(stderr, "host: %s\n", error.c_str());
    return 1;
  }
  std::string folded;
  if (!scriptprof::render_format(profile, "folded", &folded, &error)) return 1;
  std::fputs(folded.c_str(), stdout);
  lua_close(L);
  return folded.find("game_update (zone);update") != std::string::npos ? 0 : 1;
}
