// profiler.serve{address=, hz=, clock=, signal=, heap=, continuous=, window=} and
// profiler.stop_serving(): the running program answers `go tool pprof
// http://ADDRESS/debug/pprof/profile?seconds=N` until it stops serving
// (core/include/scriptprof/profile_server.hpp).
#include <string>

extern "C" {
#include <lauxlib.h>
#ifdef SCRIPTPROF_LUAJIT
#include <luajit.h>
#endif
}

#include "module_internal.hpp"
#include "scriptprof/live_collection.hpp"  // ServeSettings, in every build

namespace scriptprof::lua::module {

#ifdef SCRIPTPROF_HTTP
namespace {

// What the index page says of this program and its runtime.
ServedRun about_program(lua_State* L) {
  ServedRun about;
  about.program = "lua";
  if (lua_getglobal(L, "arg") == LUA_TTABLE) {
    if (lua_rawgeti(L, -1, 0) == LUA_TSTRING) about.program = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
#ifdef SCRIPTPROF_LUAJIT
  about.runtime = LUAJIT_VERSION;
  about.note = "LuaJIT's sampling serves one VM per process: this page serves the lua_State that called profiler.serve.";
#else
  about.runtime = LUA_RELEASE;
#endif
  return about;
}

}  // namespace
#endif

int l_serve(lua_State* L) {
  ModuleState* state = module_state(L);
  lua_settop(L, 1);
  // address, continuous and window, and the run's own options (hz: the rate of a request
  // without hz=; clock; signal; heap: the in-use heap's interval, or false).
  const char* address = "127.0.0.1:6060";
  ServeSettings settings;
  lua_newtable(L);  // 2: the run options
  if (!lua_isnil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
      if (std::string(key) == "address") {
        if (lua_type(L, -1) != LUA_TSTRING)
          luaL_argerror(L, 1, lua_pushfstring(L, "option 'address' must be a string, got %s", luaL_typename(L, -1)));
        address = lua_tostring(L, -1);  // anchored by the table at 1
      } else if (std::string(key) == "continuous") {
        // A rate in Hz (19 is usual), or false/0 for none.
        if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
          settings.continuous_hz = 0;
        } else if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) >= 0 && lua_tonumber(L, -1) <= 1000) {
          settings.continuous_hz = lua_tonumber(L, -1);
        } else {
          luaL_argerror(L, 1, "option 'continuous' must be a rate from 0 to 1000 Hz (19 is usual) or false");
        }
      } else if (std::string(key) == "window") {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > 86400)
          luaL_argerror(L, 1, "option 'window' must be a whole number of seconds from 1 to 86400");
        settings.window_seconds = static_cast<std::uint64_t>(lua_tointeger(L, -1));
      } else if (std::string(key) == "hz" || std::string(key) == "clock" || std::string(key) == "signal" ||
                 std::string(key) == "heap") {
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_settable(L, 2);
      } else {
        luaL_argerror(L, 1, lua_pushfstring(L, "option '%s' is not one of address, hz, clock, signal, heap, continuous, window",
                                            lua_type(L, -2) == LUA_TSTRING ? key : luaL_typename(L, -2)));
      }
      lua_pop(L, 1);
    }
  }
#ifndef SCRIPTPROF_HTTP
  (void)state, (void)address;
  return luaL_error(L, "profiler.serve: this build has no profile server (build with libcpp-httplib-dev installed)");
#else
  if (state->served.serving())
    return luaL_error(L, "profiler.serve: already serving at %s (call profiler.stop_serving() first)",
                      state->served.address().c_str());
  RunOptions o = parse_run_options(L, 2);
  make_served(o.sampler);
  start_fresh_or_raise(L, o);  // refuses a run already on
  ModuleSampler* sampler = attach_sampler(L);
  bool ok;
  {
    std::string error;
    ok = state->served.start(sampler->engine(), address, settings, about_program(L), &error);
    if (!ok) lua_pushfstring(L, "profiler.serve: cannot serve profiles: %s", error.c_str());
  }
  if (!ok) {
    sampler->stop();
    return lua_error(L);
  }
  lua_pushstring(L, state->served.address().c_str());
  return 1;
#endif
}

int l_stop_serving(lua_State* L) {
  stop_serving(L);
  return 0;
}

void stop_serving(lua_State* L) {
#ifdef SCRIPTPROF_HTTP
  ModuleState* state = module_state(L);
  if (!state->served.serving()) return;
  state->served.stop();
  attach_sampler(L)->stop();
#else
  (void)L;
#endif
}

}  // namespace scriptprof::lua::module
