// luaprof --lua PATH: the script runs under another Lua interpreter (lua5.1 to 5.5, luajit, a
// host's own build), which loads the profiler module built for it from beside luaprof and runs
// luaprof's command line there (profiler.luaprof): the same options, reports and files.
#pragma once
#include <string>

namespace luaprof {

// Replaces this process with `interpreter` running argv (luaprof's whole command line) through
// the module; -E goes to the interpreter. Returns only when it cannot run it: the reason is
// printed, and the status is the shell's (127 not found, 126 not runnable) or, with no module
// folder beside luaprof, cli::kUsage.
int exec_other_lua(const std::string& interpreter, int argc, char** argv, bool no_env);

}  // namespace luaprof
