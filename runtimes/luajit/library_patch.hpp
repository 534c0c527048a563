// Library functions a run replaces and puts back (coroutine.resume/wrap, debug.sethook, and
// debug.gethook while calls are counted): one save-replace-restore for all. The library's own
// functions wait in a registry table under `key` until restore_library_functions.
#pragma once
#include <initializer_list>

extern "C" {
#include <lua.h>
}

namespace scriptprof::luajit {

struct LibraryReplacement {
  const char* name;
  lua_CFunction function;
};

// Replaces package.loaded[lib][name] for each entry, keeping the originals under `key`.
// Nothing happens when the library is not loaded.
void replace_library_functions(lua_State* L, const char* lib, const char* key,
                               std::initializer_list<LibraryReplacement> replacements);
// Puts the originals kept under `key` back, and forgets them.
void restore_library_functions(lua_State* L, const char* lib, const char* key);
// Pushes the original `name` kept under `key` (nil when none is kept).
void push_original_function(lua_State* L, const char* key, const char* name);

}  // namespace scriptprof::luajit
