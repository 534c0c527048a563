#include "library_patch.hpp"

namespace scriptprof::luajit {
namespace {

// Pushes package.loaded[lib] and returns true, or pushes nothing and returns false.
bool push_library(lua_State* L, const char* lib) {
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, lib);
    lua_remove(L, -2);
    if (lua_type(L, -1) == LUA_TTABLE) return true;
  }
  lua_pop(L, 1);
  return false;
}

}  // namespace

void replace_library_functions(lua_State* L, const char* lib, const char* key,
                               std::initializer_list<LibraryReplacement> replacements) {
  if (!push_library(L, lib)) return;
  const int library = lua_gettop(L);
  lua_createtable(L, 0, static_cast<int>(replacements.size()));
  for (const LibraryReplacement& r : replacements) {
    lua_getfield(L, library, r.name);
    lua_setfield(L, -2, r.name);
    lua_pushcfunction(L, r.function);
    lua_setfield(L, library, r.name);
  }
  lua_setfield(L, LUA_REGISTRYINDEX, key);
  lua_pop(L, 1);
}

void restore_library_functions(lua_State* L, const char* lib, const char* key) {
  lua_getfield(L, LUA_REGISTRYINDEX, key);
  if (lua_type(L, -1) == LUA_TTABLE && push_library(L, lib)) {
    const int library = lua_gettop(L);
    for (lua_pushnil(L); lua_next(L, library - 1) != 0;) {  // name, original
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_settable(L, library);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

void push_original_function(lua_State* L, const char* key, const char* name) {
  lua_getfield(L, LUA_REGISTRYINDEX, key);
  if (lua_type(L, -1) == LUA_TTABLE) lua_getfield(L, -1, name);
  else lua_pushnil(L);
  lua_remove(L, -2);
}

}  // namespace scriptprof::luajit
