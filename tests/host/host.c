/* A host program in plain C: one Lua state, a zone around the script call, a report and a
   LispWorks tree. Exit status 0 only when the profile has samples under the zone. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "scriptprof_lua.h"

static const char* script =
    "function update(n) local t = {} for i = 1, n do t[i % 64] = tostring(i) end end";

static int check(scriptprof_status status, const char* what) {
  if (status != SCRIPTPROF_OK) fprintf(stderr, "host: %s: %s\n", what, scriptprof_error());
  return status == SCRIPTPROF_OK;
}

int main(int argc, char** argv) {
  const char* tree_path = argc > 1 ? argv[1] : "host.tree";
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_dostring(L, script) != LUA_OK) return 1;

  scriptprof_options options;
  scriptprof_options_init(&options);
  options.hz = 1000;
  scriptprof_profiler* profiler;
  if (!check(scriptprof_create(&options, &profiler), "create")) return 1;
  if (!check(scriptprof_attach(profiler, L), "attach") || !check(scriptprof_start(profiler, L), "start")) return 1;

  uint32_t zone = scriptprof_zone_id("game_update");
  scriptprof_zone_begin(zone);
  lua_getglobal(L, "update");
  lua_pushinteger(L, 2000000);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) return 1;
  scriptprof_zone_end(zone);

  if (!check(scriptprof_stop(profiler, L), "stop")) return 1;
  scriptprof_profile* profile;
  if (!check(scriptprof_take_profile(profiler, &profile), "take_profile")) return 1;
  char* report;
  if (!check(scriptprof_profile_report(profile, "flat", &report), "report")) return 1;
  fputs(report, stdout);
  int ok = strstr(report, "update") != NULL && scriptprof_profile_samples(profile) > 0;
  scriptprof_string_free(report);
  if (!check(scriptprof_profile_write(profile, "lispworks", tree_path), "write")) return 1;
  scriptprof_profile_free(profile);
  check(scriptprof_destroy(profiler), "destroy");
  lua_close(L);
  return ok ? 0 : 1;
}
