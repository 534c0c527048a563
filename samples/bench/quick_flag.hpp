// The C++ benches' one argument: `bench [--quick]` (one short round instead of the full run).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>

// True for --quick; any other argument prints the usage and exits with status 2.
inline bool quick_flag(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 2 || (argc == 2 && !quick)) {
    std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
    std::exit(2);
  }
  return quick;
}
