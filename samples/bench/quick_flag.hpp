// The C++ benches' common option: `bench [--quick]` (one short round instead of the full run).
#pragma once
#include <CLI/CLI.hpp>

// Adds --quick to `app`; the bench reads the flag after CLI11_PARSE.
inline bool* add_quick_flag(CLI::App& app) {
  static bool quick = false;
  app.add_flag("--quick", quick, "one short round instead of the full run");
  return &quick;
}

// For benches with no option of their own: parses argv (usage and exit status 2 on anything
// else, --help prints it) and says whether --quick was given.
inline bool quick_flag(int argc, char** argv) {
  CLI::App app{"scriptprof bench"};
  const bool* quick = add_quick_flag(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return *quick;
}
