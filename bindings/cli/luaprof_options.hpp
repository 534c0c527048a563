// luaprof's command line: the options before the script, parsed with CLI11 into the run's
// settings, with luaprof's own usage text and error messages (status 1 on a bad command line).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "lua_sampler.hpp"
#include "scriptprof/profile_io.hpp"

namespace luaprof {

struct Options {
  scriptprof::lua::SamplerSettings sampler;
  std::string report_file;  // empty: stdout
  std::string style = "flat";
  std::string output;       // -o FILE: the profile in `format`
  std::string format;
  std::vector<std::string> annotate;  // functions whose source to print with per-line shares
  scriptprof::ReportOptions report;   // hidden functions and packages
  int script = 0;           // argv index of the script; argc when there is none
  // lua5.4's own options, after luaprof's and before the script, run in their order:
  // 'e' (-e stat), 'l' (-l mod), 'W' (-W: warnings on).
  struct LuaArg {
    char kind;
    std::string value;
  };
  std::vector<LuaArg> lua_args;
  bool no_env = false;      // -E: ignore LUA_INIT and the LUA_PATH variables
};

// Prints the usage text.
void usage(FILE* out);
// Parses argv; on a bad command line prints why and exits with status 1, on --help or
// --version prints and exits with 0.
Options parse_options(int argc, char** argv);

}  // namespace luaprof
