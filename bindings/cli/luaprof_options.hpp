// The command line of luaprof and luajitprof: the options before the script, parsed with CLI11
// into the run's settings, with the program's own usage text and error messages (status 1 on a
// bad command line), then the interpreter's own options (lua5.4's, or luajit's).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "scriptprof/run_options.hpp"
#include "scriptprof/profile_io.hpp"

namespace luaprof {

// A run option the program's runtime cannot serve (RunOptionSpec::name), and why: left out of
// --help, and refused with the reason when given.
struct Unsupported {
  const char* option;
  const char* why;
};

// Which program parses: its name, the interpreter it stands in for, and what that one accepts.
struct Frontend {
  const char* program = "luaprof";
  const char* interpreter = "lua5.4";
  const char* version = "";  // the interpreter's release, for --version
  bool jit_options = false;  // luajit's -j cmd and -O[opt] (else lua5.4's -W)
  bool lua_options = true;   // an interpreter's -e, -l, -E...; false: only the script (asprof)
  bool other_lua = false;    // --lua PATH: luaprof, and the module's profiler.luaprof (which
                             // runs in that interpreter and ignores it)
  const char* script = "script.lua";
  std::vector<Unsupported> unsupported;
};

struct Options {
  scriptprof::RunSettings run;
  bool keep_chunk_text = false;  // keep chunk text for --annotate
  std::string report_file;  // empty: stdout
  std::string style = "flat";
  std::string output;       // -o FILE: the profile in `format`
  std::string format;
  std::vector<std::string> annotate;  // functions whose source to print with per-line shares
  scriptprof::ReportOptions report;   // hidden functions and packages
  int script = 0;           // argv index of the script; argc when there is none
  // The interpreter's own options, after ours and before the script, run in their order:
  // 'e' (-e stat), 'l' (-l mod), 'W' (-W: warnings on), 'j' (-j cmd), 'O' (-O opt).
  struct LuaArg {
    char kind;
    std::string value;
  };
  std::vector<LuaArg> lua_args;
  bool no_env = false;      // -E: ignore LUA_INIT and the LUA_PATH variables
  std::string other_lua;    // --lua PATH: the interpreter to run the script under
  std::string serve;        // --serve ADDRESS: serve profiles while the script runs (no report)
  double continuous = 0;    // --continuous HZ: with --serve, the always-on rate of the recent window
  std::uint64_t window = 600;  // --window SECONDS: the recent window kept
};

// Prints the usage text.
void usage(FILE* out, const Frontend& fe);
// Parses argv and checks what it names: the script can be read, -o and --report can be
// written. On a bad command line or input prints why and exits with cli::kUsage (nothing has
// run), on --help or --version prints and exits with 0.
Options parse_options(int argc, char** argv, const Frontend& fe);

}  // namespace luaprof
