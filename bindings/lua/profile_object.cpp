#include "profile_object.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <cstdio>
#include <new>
#include <string>

#include "lua_api_compat.hpp"

namespace scriptprof::lua {

namespace {

const char kProfileMeta[] = "scriptprof.profile";

struct ProfileBox {
  std::shared_ptr<const Profile> profile;
  const char* kind;  // a string literal
};

int profile_gc(lua_State* L) {
  auto* box = static_cast<ProfileBox*>(luaL_checkudata(L, 1, kProfileMeta));
  box->~ProfileBox();
  new (box) ProfileBox{nullptr, "freed"};  // a second __gc (resurrection) finds nothing to free
  return 0;
}

int profile_tostring(lua_State* L) {
  auto* box = static_cast<ProfileBox*>(luaL_checkudata(L, 1, kProfileMeta));
  std::uint64_t n = box->profile ? box->profile->sample_weight() : 0;
  char weight[24];  // lua_pushfstring's %I is 5.3's: 5.1 and 5.2 would misread the arguments
  std::snprintf(weight, sizeof weight, "%llu", static_cast<unsigned long long>(n));
  lua_pushfstring(L, "profile (%s, weight %s): %p", box->kind, weight, static_cast<const void*>(box));
  return 1;
}

}  // namespace

void push_profile_object(lua_State* L, std::shared_ptr<const Profile> profile, const char* kind) {
  void* mem = lua_newuserdatauv(L, sizeof(ProfileBox), 0);
  new (mem) ProfileBox{std::move(profile), kind};
  luaL_setmetatable(L, kProfileMeta);
}

const Profile* test_profile_object(lua_State* L, int idx) {
  auto* box = static_cast<ProfileBox*>(luaL_testudata(L, idx, kProfileMeta));
  return box && box->profile ? box->profile.get() : nullptr;
}

void register_profile_object(lua_State* L, const luaL_Reg* methods) {
  if (luaL_newmetatable(L, kProfileMeta)) {
    lua_pushcfunction(L, profile_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, profile_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_newtable(L);
  lua_pushvalue(L, -3);  // the module's upvalue (its state) rides along, as for module functions
  luaL_setfuncs(L, methods, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

}  // namespace scriptprof::lua
