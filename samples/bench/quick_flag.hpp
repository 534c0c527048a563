// The C++ benches' command line: the common option `--quick` (one short round instead of the
// full run), parsed with CLI11; usage and exit status 2 on anything else, --help prints it.
#pragma once
#include <CLI/CLI.hpp>

// Adds --quick to `app`, setting `*quick`.
inline void add_quick_flag(CLI::App& app, bool* quick) {
  app.add_flag("--quick", *quick, "one short round instead of the full run");
}

// Parses argv into `app`'s options, or exits: 0 after --help, 2 on a bad command line.
inline void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
}

// For benches with no option of their own: whether --quick was given.
inline bool quick_flag(int argc, char** argv) {
  CLI::App app{"scriptprof bench"};
  bool quick = false;
  add_quick_flag(app, &quick);
  parse_or_exit(app, argc, argv);
  return quick;
}
