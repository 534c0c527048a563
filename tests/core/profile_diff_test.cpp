// profdiff's core: functions matched across two profiles (function_matching.hpp: by name and
// file, whatever their line), ordered by change, the report's columns, and the differential
// folded stacks.
#include <catch2/catch.hpp>

#include "scriptprof/folded_stacks.hpp"
#include "scriptprof/function_matching.hpp"
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

namespace {

// A profile read from folded text, as profdiff reads a saved file: labels only.
Profile folded(const std::string& text) {
  Profile p;
  std::string error;
  REQUIRE(read_folded("# scriptprof period_ns=1000000 clock=cpu\n" + text, &p, &error));
  return p;
}

const FunctionChange* change_of(const std::vector<FunctionChange>& changes, const std::string& label) {
  for (const FunctionChange& c : changes)
    if (c.label == label) return &c;
  return nullptr;
}

}  // namespace

// Read from files, a function is only a label with its line in it: the match takes the label
// apart, so a moved line, another checkout's path and anonymous functions in order still match.
TEST_CASE("profdiff matches functions read from files across moved lines and checkouts") {
  Profile base = folded(
      "main chunk (/a/proj/src/game.lua);update (/a/proj/src/game.lua:10) 50\n"
      "main chunk (/a/proj/src/game.lua);<anonymous> (/a/proj/src/game.lua:20) 10\n"
      "main chunk (/a/proj/src/game.lua);<anonymous> (/a/proj/src/game.lua:30) 20\n"
      "main chunk (/a/proj/src/game.lua);gone (/a/proj/src/game.lua:40) 5\n");
  Profile now = folded(
      "main chunk (/b/proj/src/game.lua);update (/b/proj/src/game.lua:12) 40\n"
      "main chunk (/b/proj/src/game.lua);<anonymous> (/b/proj/src/game.lua:22) 11\n"
      "main chunk (/b/proj/src/game.lua);<anonymous> (/b/proj/src/game.lua:32) 19\n"
      "main chunk (/b/proj/src/game.lua);added (/b/proj/src/game.lua:50) 7\n");
  const std::vector<FunctionChange> changes = diff_functions(base, now);
  using Presence = FunctionChange::Presence;
  const FunctionChange* update = change_of(changes, "update (/b/proj/src/game.lua:12)");
  REQUIRE(update);
  CHECK(update->presence == Presence::Both);
  CHECK(update->base_self == Approx(0.05));
  CHECK(update->new_self == Approx(0.04));
  const FunctionChange* second = change_of(changes, "<anonymous> (/b/proj/src/game.lua:32)");
  REQUIRE(second);
  CHECK(second->base_self == Approx(0.02));  // the second anonymous function of the file
  CHECK(change_of(changes, "main chunk (/b/proj/src/game.lua)")->presence == Presence::Both);
  REQUIRE(change_of(changes, "gone (/a/proj/src/game.lua:40)"));
  CHECK(change_of(changes, "gone (/a/proj/src/game.lua:40)")->presence == Presence::BaseOnly);
  CHECK(change_of(changes, "added (/b/proj/src/game.lua:50)")->presence == Presence::NewOnly);
  CHECK(changes.size() == 6);
  const std::string report = diff_report(base, now, 0);
  CHECK(report.find("gone (/a/proj/src/game.lua:40)  [only in base]\n") != std::string::npos);
  CHECK(report.find("added (/b/proj/src/game.lua:50)  [only in new]\n") != std::string::npos);
  // The flame graphs compare stacks by label: aligned, the base run's stacks take the new run's.
  CHECK(align_labels(&base, now) == 4);  // update, two anonymous, main chunk
  CHECK(diff_folded(base, now).find("main chunk (/b/proj/src/game.lua);update (/b/proj/src/game.lua:12) 50 40\n") !=
        std::string::npos);
}

// Two functions of one name in one file (two local `update`s): which is which is not known, so
// neither is matched with anything, and the report says so rather than guess.
TEST_CASE("profdiff lists ambiguous functions unmatched, never guesses") {
  Profile base = folded("main chunk (g.lua);update (g.lua:10) 30\nmain chunk (g.lua);update (g.lua:50) 20\n");
  Profile now = folded("main chunk (g.lua);update (g.lua:12) 40\n");
  const std::vector<FunctionChange> changes = diff_functions(base, now);
  CHECK(changes.size() == 4);  // main chunk, both of base's, now's: none merged
  for (const FunctionChange& c : changes)
    if (c.label.rfind("update", 0) == 0) CHECK(c.presence == FunctionChange::Presence::Ambiguous);
  CHECK(diff_report(base, now, 0).find("update (g.lua:12)  [ambiguous: not matched]\n") != std::string::npos);
  CHECK(align_labels(&base, now) == 0);
}
