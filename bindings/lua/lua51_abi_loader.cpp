// lib/lua/5.1/profiler.so: the one module of the 5.1 ABI, which LuaJIT and PUC Lua 5.1 share
// (Debian puts both interpreters' C modules in one lua/5.1 directory). It holds no profiler:
// it asks which of the two loaded it and loads that one's module from beside it
// (scriptprof/luajit.so or scriptprof/lua51.so). The two are separate builds of the same
// sources, so only one of them is ever mapped into a process.
#include <dlfcn.h>

#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace {

using Open = int (*)(lua_State*);

// This file's directory, through the dynamic linker: where the interpreter found it.
std::string own_directory() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&own_directory), &info) || !info.dli_fname) return ".";
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

// Only the functions both interpreters export are used here: the module must load into either.
extern "C" __attribute__((visibility("default"))) int luaopen_profiler(lua_State* L) {
  // LuaJIT's own API is the one mark that LuaJIT's core, not PUC Lua's, provides lua_*.
  const bool luajit = dlsym(RTLD_DEFAULT, "luaJIT_setmode") != nullptr;
  const std::string path = own_directory() + (luajit ? "/scriptprof/luajit.so" : "/scriptprof/lua51.so");
  // Never closed: a profiler's timer or hooks may outlive the state that required it.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();  // names the path
    return luaL_error(L, "profiler: this is %s, and its module did not load: %s", luajit ? "LuaJIT" : "Lua 5.1",
                      why ? why : path.c_str());
  }
  auto open = reinterpret_cast<Open>(dlsym(library, "luaopen_profiler"));
  if (!open) return luaL_error(L, "profiler: %s has no luaopen_profiler", path.c_str());
  return open(L);
}
