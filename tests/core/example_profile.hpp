// The worked example of FORMATS.md 0.5, built through the public API: main calls a (which
// recurses once) and then b; 10 samples of 100 ms.
#pragma once
#include "scriptprof/profile.hpp"

namespace scriptprof::test {

struct Example {
  Profile profile;
  FunctionId main = 0, a = 0, b = 0;
};

// `line_a`/`line_b`/`line_main` and `file` let tests match either FORMATS.md 1.8 (lines 1, 5, 9)
// or the vector file statprof_demo.txt (line 1 everywhere); an empty file gives bare names.
// `kind` Named keeps bare labels with file and line (the pprof and speedscope vectors).
inline Example worked_example(const char* file = "demo.lua", int line_main = 9, int line_a = 1,
                              int line_b = 5, FunctionKind kind = FunctionKind::Script) {
  Example e;
  Profile& p = e.profile;
  p.period_ns = 100'000'000;
  p.total_seconds = 1.0;
  p.keep_samples = true;  // the timeline formats need the samples in time order
  e.main = p.add_function({"main", file, line_main, 0, kind});
  e.a = p.add_function({"a", file, line_a, 0, kind});
  e.b = p.add_function({"b", file, line_b, 0, kind});
  const FunctionId ma[] = {e.main, e.a}, maa[] = {e.main, e.a, e.a}, mb[] = {e.main, e.b};
  std::uint64_t t = 0;
  auto add = [&](const FunctionId* f, std::size_t n, int times) {
    for (int i = 0; i < times; ++i, t += 100'000'000) p.add_sample(0, t, 1, f, n);
  };
  add(ma, 2, 1);
  add(maa, 3, 4);
  add(ma, 2, 2);
  add(mb, 2, 3);
  return e;
}

}  // namespace scriptprof::test
