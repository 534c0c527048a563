#include "lua_reachable_names.hpp"

#include <algorithm>

namespace scriptprof::lua {

namespace {
constexpr int kListedEntries = 8;  // of a library's lists of functions
}  // namespace

bool push_host_entry(lua_State* L) {
  if (!lua_checkstack(L, 2)) return false;
  const bool main = lua_pushthread(L) == 1;
  lua_pop(L, 1);
  if (!main) return false;
  lua_Debug ar;
  int bottom = -1;
  for (int level = 0; lua_getstack(L, level, &ar); ++level) bottom = level;
  if (bottom < 0 || !lua_getstack(L, bottom, &ar)) return false;
  lua_getinfo(L, "Sf", &ar);
  if (ar.what[0] == 'C' && lua_iscfunction(L, -1)) return true;
  lua_pop(L, 1);
  return false;
}

bool better_name(const std::string& a, const std::string& b) {
  auto dots = [](const std::string& s) { return std::count(s.begin(), s.end(), '.'); };
  if (dots(a) != dots(b)) return dots(a) < dots(b);
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

void visit_reachable_functions(lua_State* L, bool into_global_tables, const std::function<void(const std::string&)>& visit) {
  if (!lua_checkstack(L, 8)) return;
  const int top = lua_gettop(L);
  // The fields of the table on top of the stack, named prefix + key; with `into_tables`, also
  // the fields of its tables.
  auto scan = [&](const std::string& prefix, bool into_tables) {
    const int t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t)) {
      if (lua_type(L, -2) == LUA_TSTRING) {
        std::string name = prefix + lua_tostring(L, -2);
        if (lua_type(L, -1) == LUA_TFUNCTION) {
          visit(name);
        } else if (!prefix.empty() && lua_type(L, -1) == LUA_TTABLE) {
          // A library's list of functions (package.searchers, 5.1's package.loaders): its
          // entries have no other name, "package.searchers[2]" (the first few only: shallow).
          const int list = lua_gettop(L);
          for (int i = 1; i <= kListedEntries; ++i) {
            lua_rawgeti(L, list, i);
            const int type = lua_type(L, -1);
            if (type == LUA_TFUNCTION) visit(name + "[" + std::to_string(i) + "]");
            lua_pop(L, 1);
            if (type == LUA_TNIL) break;
          }
        } else if (into_tables && lua_type(L, -1) == LUA_TTABLE && !lua_rawequal(L, -1, t)) {
          const int inner = lua_gettop(L);
          lua_pushnil(L);
          while (lua_next(L, inner)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TFUNCTION) visit(name + "." + lua_tostring(L, -2));
            lua_pop(L, 1);
          }
        }
      }
      lua_pop(L, 1);
    }
  };
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");  // package.loaded, in 5.1 as in 5.4
  if (lua_type(L, -1) == LUA_TTABLE) {
    const int loaded = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, loaded)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
        const std::string module = lua_tostring(L, -2);
        const bool globals = module == "_G";
        scan(globals ? "" : module + ".", globals && into_global_tables);
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
}

}  // namespace scriptprof::lua
