#include "other_lua.hpp"

#include "exit_status.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

namespace luaprof {
namespace {

// `s` as a Lua string literal that every Lua reads back byte for byte (5.1 has only \ddd).
std::string lua_quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c < 32 || c > 126) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\%03u", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The folder holding lib/lua/5.X/profiler.so for each Lua: beside the installed luaprof, or in
// the build tree (build/bin/luaprof, build/lib/lua). Empty when neither is there.
std::string module_root(std::string* looked) {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<std::size_t>(n));
  dir.erase(dir.rfind('/'));
  for (const std::string& root : {dir + "/" SCRIPTPROF_MODULE_ROOT_FROM_BIN, dir + "/../lib/lua"}) {
    if (is_directory(root)) return root;
    *looked += (looked->empty() ? "" : ", ") + root;
  }
  return "";
}

}  // namespace

int exec_other_lua(const std::string& interpreter, int argc, char** argv, bool no_env) {
  std::string looked;
  const std::string root = module_root(&looked);
  if (root.empty()) {
    std::fprintf(stderr, "%s: --lua %s: no folder of Lua modules beside luaprof (looked in %s)\n", argv[0],
                 interpreter.c_str(), looked.c_str());
    return cli::kUsage;
  }
  std::string args = "{[0] = " + lua_quoted(argv[0]);
  for (int i = 1; i < argc; ++i) args += ", " + lua_quoted(argv[i]);
  args += "}";
  const std::string prefix = lua_quoted(std::string(argv[0]) + ": --lua " + interpreter + ": ");
  // Lua 5.1's dialect, for every Lua: its own release's module, then luaprof's command line.
  const std::string chunk =
      "local dir = " + lua_quoted(root) + " .. '/' .. _VERSION:match('%d+%.%d+')\n"
      "local found = io.open(dir .. '/profiler.so')\n"
      "if not found then\n"
      "  io.stderr:write(" + prefix + ", 'no profiler module for ', _VERSION, ' in ', dir, '\\n')\n"
      "  os.exit(" + std::to_string(cli::kUsage) + ")\n"
      "end\n"
      "found:close()\n"
      "package.cpath = dir .. '/?.so;' .. package.cpath\n"
      "local ok, profiler = pcall(require, 'profiler')\n"
      "if not ok then\n"
      "  io.stderr:write(" + prefix + ", tostring(profiler), '\\n')\n"
      "  os.exit(" + std::to_string(cli::kUsage) + ")\n"
      "end\n"
      "os.exit(profiler.luaprof(" + args + "))\n";
  std::vector<char*> exec_argv{const_cast<char*>(interpreter.c_str())};
  if (no_env) exec_argv.push_back(const_cast<char*>("-E"));
  exec_argv.push_back(const_cast<char*>("-e"));
  exec_argv.push_back(const_cast<char*>(chunk.c_str()));
  exec_argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(interpreter.c_str(), exec_argv.data());
  const int error = errno;
  std::fprintf(stderr, "%s: --lua %s: cannot run it: %s\n", argv[0], interpreter.c_str(), std::strerror(error));
  return error == ENOENT ? cli::kNotFound : cli::kCannotRun;
}

}  // namespace luaprof
