#include "lua_release.hpp"

#include <dlfcn.h>

#include "lua_api_compat.hpp"

namespace scriptprof::lua {
namespace {

std::string name_of(int number) { return "Lua " + std::to_string(number / 100) + "." + std::to_string(number % 100); }

// L's Lua, through its lua_version as 5.4 on declare it; 5.2 and 5.3 return a pointer to the
// number instead, so it is called this way only once the other functions said 5.4 or later.
std::string named_by_5_4_version(void (*lua_version_function)(), lua_State* L) {
  using Number = lua_Number (*)(lua_State*);
  return name_of(static_cast<int>(reinterpret_cast<Number>(lua_version_function)(L)));
}

}  // namespace

std::string built_for_lua() { return name_of(LUA_VERSION_NUM); }

// Each build asks only for functions its own headers declare: one a release added or removed
// tells it from its neighbours.
std::string loading_lua(lua_State* L) {
  if (dlsym(RTLD_DEFAULT, "luaJIT_setmode")) return "LuaJIT";
#if LUA_VERSION_NUM == 501
  // 5.2 removed lua_objlen and lua_setfenv, 5.3 made lua_insert a macro, 5.4 lua_newuserdata;
  // lua_version (5.4 on), which 5.1's headers do not declare, is looked up by name.
  if (lua_objlen && lua_setfenv) return name_of(501);
  if (lua_insert) return name_of(502);
  if (lua_newuserdata) return name_of(503);
  if (void* version = dlsym(RTLD_DEFAULT, "lua_version"))
    return named_by_5_4_version(reinterpret_cast<void (*)()>(version), L);
  return "Lua 5.4 or later";
#elif LUA_VERSION_NUM == 502
  if (!lua_absindex) return name_of(501);
  if (lua_insert) return name_of(502);       // a macro from 5.3 on
  if (lua_newuserdata) return name_of(503);  // a macro from 5.4 on
#elif LUA_VERSION_NUM == 503
  if (!lua_absindex) return name_of(501);
  if (!lua_rotate) return name_of(502);
  if (lua_newuserdata) return name_of(503);
#elif LUA_VERSION_NUM >= 504
  if (!lua_absindex) return name_of(501);
  if (!lua_rotate) return name_of(502);
  if (!lua_newuserdatauv || !lua_version) return name_of(503);
#endif
#if LUA_VERSION_NUM >= 502
  return named_by_5_4_version(reinterpret_cast<void (*)()>(&lua_version), L);
#endif
}

std::string release_mismatch(lua_State* L) {
  const std::string loaded = loading_lua(L), built = built_for_lua();
  if (loaded == built) return "";
  std::string message = "profiler: this module is built for " + built + (LUA_VERSION_NUM == 504 ? " (5.4.0-5.4.8)" : "") +
                        ", and this is " + loaded + ": ";
  if (loaded == "LuaJIT") return message + "require it from build/lib/luajit (lib/lua/5.1 when installed)";
  // A release named in full ("Lua 5.3", not "Lua 5.4 or later") has a directory of its own.
  if (loaded.find(" or later") != std::string::npos) return message + "build scriptprof against this Lua's headers";
  const std::string dir = loaded.substr(4);  // "5.3"
  return message + "build scriptprof against this Lua's headers, or require the module built for it (build/lib/lua/" +
         dir + ", lib/lua/" + dir + " when installed)";
}

}  // namespace scriptprof::lua
