// Which Lua loaded the module, against the Lua its headers were: a module built for one release
// refuses another by name, before it calls anything whose ABI may differ.
#pragma once
extern "C" {
#include <lua.h>
}
#include <string>

namespace scriptprof::lua {

// The Lua this module was built for, as "Lua 5.3" (LUA_VERSION_NUM).
std::string built_for_lua();

// The Lua that loaded the module, named as built_for_lua names it ("LuaJIT" for LuaJIT), told
// from the API functions it has (every reference of the module to Lua is weak:
// cmake/ScriptprofWeakLua.cmake) and, from 5.4 on, lua_version.
std::string loading_lua(lua_State* L);

// Empty when the Lua that loaded the module is the one it was built for; else the error
// `require` raises: both releases named, and what to do.
std::string release_mismatch(lua_State* L);

}  // namespace scriptprof::lua
