// Names that say where a function lives: at the end of a run, every Lua function the profile
// met that is reachable from loaded modules and globals takes that qualified name ("Vec.new",
// "mymod.update"), whatever call site first named it ("new", "?"). The same function then has
// the same name in every run, however it was called.
#include "lua_sampler.hpp"

#include <algorithm>
#include <map>

extern "C" {
#include <lauxlib.h>
}

namespace scriptprof::lua {

namespace {

// Better names first: fewer dots (a global over a module field over a class method), then
// the shorter, then the first in byte order, so the choice is the same from run to run.
bool better(const std::string& a, const std::string& b) {
  auto dots = [](const std::string& s) { return std::count(s.begin(), s.end(), '.'); };
  if (dots(a) != dots(b)) return dots(a) < dots(b);
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace

void LuaSampler::qualify_names(lua_State* L) {
  if (!lua_checkstack(L, 8)) return;
  int top = lua_gettop(L);
  std::map<FunctionId, std::string> names;
  // The value on top of the stack, if it is a Lua function the profile met, may take `name`.
  auto offer = [&](const std::string& name) {
    FunctionId id;
    if (lua_type(L, -1) != LUA_TFUNCTION || lua_iscfunction(L, -1) || !find_function_value(L, -1, &id)) return false;
    auto it = names.find(id);
    if (it == names.end() || better(name, it->second)) names[id] = name;
    return true;
  };
  // The fields of the table on top of the stack, named prefix + key; with `into_tables`, also
  // the fields of its tables (a class or a module kept in a global: Vec.new).
  auto scan = [&](const std::string& prefix, bool into_tables) {
    int t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t)) {
      if (lua_type(L, -2) == LUA_TSTRING) {
        std::string name = prefix + lua_tostring(L, -2);
        if (!offer(name) && into_tables && lua_type(L, -1) == LUA_TTABLE && !lua_rawequal(L, -1, t)) {
          int inner = lua_gettop(L);
          lua_pushnil(L);
          while (lua_next(L, inner)) {
            if (lua_type(L, -2) == LUA_TSTRING) offer(name + "." + lua_tostring(L, -2));
            lua_pop(L, 1);
          }
        }
      }
      lua_pop(L, 1);
    }
  };
  if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) == LUA_TTABLE) {
    int loaded = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, loaded)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
        std::string module = lua_tostring(L, -2);
        bool globals = module == LUA_GNAME;
        scan(globals ? "" : module + ".", globals);
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
  for (const auto& [id, name] : names) {
    rename_function(id, name);
    name_tries_[id] = 0;  // a call site's name no longer replaces it
  }
}

}  // namespace scriptprof::lua
