// Where a report goes: stdout, an open Lua file handle, or a path written atomically.
#include "module_internal.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}

#include "scriptprof/atomic_file.hpp"

namespace scriptprof::lua::module {

// Lua errors longjmp past C++ frames, whose objects are then never destroyed (a leak at best).
// So the functions below check their Lua arguments before they own any heap memory, and report
// later failures by pushing the message; the entry point raises once those objects are gone.

namespace {
// The stream of the Lua file handle at `arg` (nullptr: closed); raises when it is not one.
FILE* file_handle(lua_State* L, int arg) {
#if LUA_VERSION_NUM == 501
  struct IoFile {  // LuaJIT's io handle (lib_io.c's IOFileUD): no FILE once closed
    FILE* fp;
    std::uint32_t type;
  };
  auto* h = static_cast<IoFile*>(luaL_testudata(L, arg, LUA_FILEHANDLE));
  if (!h) luaL_typeerror(L, arg, "file name or file handle");
  return h->fp;
#else
  auto* stream = static_cast<luaL_Stream*>(luaL_testudata(L, arg, LUA_FILEHANDLE));
  if (!stream) luaL_typeerror(L, arg, "file name or file handle");
  return stream->closef ? stream->f : nullptr;
#endif
}
}  // namespace

// Checks an output argument: nil (stdout), a path, or an open Lua file handle.
void check_output(lua_State* L, int arg) {
  if (lua_isnoneornil(L, arg) || lua_type(L, arg) == LUA_TSTRING) return;
  if (!file_handle(L, arg)) luaL_argerror(L, arg, "attempt to use a closed file");
}

// Writes report text to stdout (nil), an open Lua file handle, or a path (atomically), as
// check_output allowed. False with the message pushed when the write fails.
bool emit(lua_State* L, int arg, const std::string& text) {
  if (lua_isnoneornil(L, arg)) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  if (lua_type(L, arg) == LUA_TSTRING) {
    std::string error;
    if (write_file_atomically(lua_tostring(L, arg), text, &error)) return true;
    lua_pushstring(L, error.c_str());
    return false;
  }
  if (std::fwrite(text.data(), 1, text.size(), file_handle(L, arg)) == text.size()) return true;
  lua_pushfstring(L, "cannot write the report: %s", std::strerror(errno));
  return false;
}

}  // namespace scriptprof::lua::module
