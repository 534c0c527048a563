// The tables through which a program reaches a standard library, for replacing its functions.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Calls replace(L, table index) on package.loaded[library] and, when it is another table, on
// the global of that name (a program may hold its own). Leaves the stack as it found it.
void replace_in_library(lua_State* L, const char* library, void (*replace)(lua_State* L, int table));

// Wrapping a library's functions. push_originals pushes table[names[i]] for i < n, or returns
// false with the stack unchanged unless each is a C function and none is one of `ours` (a
// table wrapped before, or holding a program's own function, stays as it is). The caller may
// push more values; install_wrappers then sets table[names[i]] to a C closure of ours[i] over
// the top `upvalues` values (the originals first), pops them, and leaves the stack as before.
bool push_originals(lua_State* L, int table, const char* const* names, const lua_CFunction* ours, int n);
void install_wrappers(lua_State* L, int table, const char* const* names, const lua_CFunction* ours, int n,
                      int upvalues);

}  // namespace scriptprof::lua
