// The names under which a program reaches its functions: the fields of every loaded module
// ("string.format", "mymod.update"), the globals under their own name ("print"), and with
// `into_global_tables` the fields of tables kept in globals (a class: "Vec.new"). Lua 5.1's API
// only: compiled into the Lua 5.4 adapter and into the LuaJIT adapter.
#pragma once
extern "C" {
#include <lua.h>
}
#include <functional>
#include <string>

namespace scriptprof::lua {

// Calls visit(name) with each reachable function on top of L's stack (visit leaves the stack
// as it found it). Leaves the stack as it found it.
// With "package.searchers[2]" for the entries of a library's lists of functions.
void visit_reachable_functions(lua_State* L, bool into_global_tables, const std::function<void(const std::string&)>& visit);

// The name of the C function at the bottom of the main thread's stack, which the program that
// embeds Lua called it through (lua.c's pmain): no table reaches it.
inline constexpr const char* kHostEntryName = "host entry";
// When L is the main thread and the bottom of its stack is a C function, pushes that function
// and returns true; else leaves the stack as it is and returns false.
bool push_host_entry(lua_State* L);

// Whether `a` is a better name than `b` for one function: fewer dots (a global over a module
// field over a class method), then the shorter, then the first in byte order, so that the
// choice is the same from run to run.
bool better_name(const std::string& a, const std::string& b);

}  // namespace scriptprof::lua
