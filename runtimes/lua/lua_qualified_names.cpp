// Names that say where a function lives: at the end of a run, every Lua function the profile
// met that is reachable from loaded modules and globals takes that qualified name ("Vec.new",
// "mymod.update"), whatever call site first named it ("new", "?"). The same function then has
// the same name in every run, however it was called.
#include "lua_function_table.hpp"

#include <map>

#include "lua_reachable_names.hpp"

namespace scriptprof::lua {

void LuaFunctionTable::qualify_names(lua_State* L) {
  std::map<FunctionId, std::string> names;
  visit_reachable_functions(L, true, [&](const std::string& name) {
    FunctionId id;
    if (lua_iscfunction(L, -1) || !find_function_value(L, -1, &id)) return;
    auto it = names.find(id);
    if (it == names.end() || better_name(name, it->second)) names[id] = name;
  });
  for (const auto& [id, name] : names) {
    rename_function(id, name);
    name_tries_[id] = 0;  // a call site's name no longer replaces it
  }
}

}  // namespace scriptprof::lua
