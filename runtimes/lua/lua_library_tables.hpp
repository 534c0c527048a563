// The tables through which a program reaches a standard library, for replacing its functions.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Calls replace(L, table index) on package.loaded[library] and, when it is another table, on
// the global of that name (a program may hold its own). Leaves the stack as it found it.
void replace_in_library(lua_State* L, const char* library, void (*replace)(lua_State* L, int table));

}  // namespace scriptprof::lua
