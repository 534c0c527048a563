// profdiff's core: functions matched across two profiles (by name and file, whatever their line),
// ordered by change, the report's columns, and the differential folded stacks.
#include <catch2/catch.hpp>

#include "scriptprof/profile_diff.hpp"

using namespace scriptprof;

namespace {

// main -> {heavy -> spin, light -> spin}: `heavy` and `light` samples of spin, 1 ms each.
Profile run(std::uint64_t heavy, std::uint64_t light, int spin_line) {
  Profile p;
  FunctionId main = p.add_function({"main", "w.lua", 1, 30, FunctionKind::Main});
  FunctionId h = p.add_function({"heavy", "w.lua", 13, 13, FunctionKind::Script});
  FunctionId l = p.add_function({"light", "w.lua", 14, 14, FunctionKind::Script});
  FunctionId spin = p.add_function({"spin", "w.lua", spin_line, spin_line + 4, FunctionKind::Script});
  const FunctionId hs[] = {main, h, spin}, ls[] = {main, l, spin};
  if (heavy) p.add_sample(0, 0, heavy, hs, 3);
  if (light) p.add_sample(0, 1, light, ls, 3);
  p.total_seconds = 0.001 * static_cast<double>(heavy + light);
  return p;
}

}  // namespace

TEST_CASE("profdiff matches functions by name and file, and puts the largest change first") {
  Profile before = run(300, 100, 6), after = run(100, 100, 8);  // spin moved two lines down
  std::vector<FunctionChange> changes = diff_functions(before, after);
  REQUIRE(changes.size() == 4);  // main, heavy, light, spin: spin's move made no new function
  CHECK(changes[0].label == "spin (w.lua:8)");  // the new run's label
  CHECK(changes[0].base_self == Approx(0.4));
  CHECK(changes[0].new_self == Approx(0.2));
  CHECK(changes[0].base_self_pct == Approx(100.0));
  // Then main and heavy, each 0.2 s less cumulative time, no self time.
  const FunctionChange& heavy = changes[1].label.rfind("heavy", 0) == 0 ? changes[1] : changes[2];
  CHECK(heavy.label == "heavy (w.lua:13)");
  CHECK(heavy.base_cumulative == Approx(0.3));
  CHECK(heavy.new_cumulative == Approx(0.1));
  CHECK(changes.back().label.rfind("light", 0) == 0);  // unchanged: last
  CHECK(changes.back().new_cumulative == Approx(changes.back().base_cumulative));
}

TEST_CASE("profdiff's report lists before, after and the change, limited") {
  std::string text = diff_report(run(300, 100, 6), run(100, 100, 6), 2);
  CHECK(text.find("base: 400 samples, 0.400 seconds") != std::string::npos);
  CHECK(text.find("new : 200 samples, 0.200 seconds") != std::string::npos);
  CHECK(text.find("total time -50.0%") != std::string::npos);
  CHECK(text.find("100.00 100.00   +0.00    0.40   0.20   -0.20    0.40   0.20   -0.20  spin (w.lua:6)") != std::string::npos);
  CHECK(text.find("(2 more functions changed less; --limit 0 lists all)") != std::string::npos);
}

TEST_CASE("profdiff's folded stacks carry both weights, for a differential flame graph") {
  std::string folded = diff_folded(run(300, 100, 6), run(0, 50, 6));
  CHECK(folded ==
        "main chunk (w.lua);heavy (w.lua:13);spin (w.lua:6) 300 0\n"
        "main chunk (w.lua);light (w.lua:14);spin (w.lua:6) 100 50\n");
}
