// Saved profiles as Lua values (Allegro's save-current-profile): a userdata that owns a profile,
// so a user can profile twice and report or write either run.
#pragma once
#include <memory>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "scriptprof/profile.hpp"

namespace scriptprof::lua {

// Pushes a profile object owning `profile`; `kind` ("time", "gc", "space") is what it samples.
void push_profile_object(lua_State* L, std::shared_ptr<const Profile> profile, const char* kind);

// The profile of the object at `idx`, or nullptr when the value is not a profile object.
const Profile* test_profile_object(lua_State* L, int idx);

// Registers the objects' metatable; `methods` are set as its __index table (each method
// receives the object as its first argument, as module functions taking a profile do).
void register_profile_object(lua_State* L, const luaL_Reg* methods);

}  // namespace scriptprof::lua
