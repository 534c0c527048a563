#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "example_profile.hpp"
#include "scriptprof/statprof_flat_report.hpp"

using namespace scriptprof;

namespace {
// One "=== title" section of the vector file rendered with Guile's own format directives.
std::string vector_section(const std::string& title) {
  std::ifstream in(std::string(SCRIPTPROF_FORMATS_DIR) + "/vectors/statprof_demo.txt");
  REQUIRE(in);
  std::string line, out;
  bool on = false;
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      on = line == "=== " + title;
      continue;
    }
    if (on) out += line + "\n";
  }
  REQUIRE_FALSE(out.empty());
  return out;
}
}  // namespace

TEST_CASE("flat report of the worked example matches Guile 3 byte for byte (FORMATS 1.8)") {
  auto e = test::worked_example("demo.lua", 1, 1, 1);  // the vector file puts every function at line 1
  FlatReportOptions o;
  o.labels = LabelStyle::Guile;
  CHECK(statprof_flat_report(e.profile, o) == vector_section("3.0 flat, no call counts"));
  CHECK(statprof_flat_report(e.profile, o).find("jit%") == std::string::npos);
}

TEST_CASE("flat report with lines 1 - 5 - 9 and plain labels") {
  auto e = test::worked_example();
  std::string expected =
      "%     cumulative   self             \n"
      "time   seconds     seconds  procedure\n"
      " 70.00      0.70      0.70  a (demo.lua:1)\n"
      " 30.00      0.30      0.30  b (demo.lua:5)\n"
      "  0.00      1.00      0.00  main (demo.lua:9)\n"
      "---\n"
      "Sample count: 10\n"
      "Total time: 1.0 seconds (0.0 seconds in GC)\n";
  CHECK(statprof_flat_report(e.profile) == expected);
}

// A runtime that cannot tell the collector's time (PUC Lua: its steps run inside allocations)
// must not print "0.0 seconds in GC"; one that can prints its share to the nanosecond, as
// Guile's nanosecond clocks do, not a 17-digit quotient.
TEST_CASE("the footer says when GC time is not measured, and prints GC seconds to the nanosecond") {
  auto e = test::worked_example();
  Profile& p = e.profile;
  p.gc_measured = false;
  p.gc_seconds = 0.25;  // time in explicit collections (collectgarbage)
  const std::string text = statprof_flat_report(p);
  CHECK(text.substr(text.find("\nTotal time")) ==
        "\nTotal time: 1.0 seconds (0.25 seconds in GC)\n"
        "GC time: not measured on this runtime (the seconds in GC above are explicit collections)\n");
  p.gc_measured = true;
  p.total_seconds = 0.060343345;
  p.gc_seconds = 0.060343345 * 38 / 64;  // the collector's share of the samples
  CHECK(statprof_flat_report(p).find("\nTotal time: 0.060343345 seconds (0.035828861 seconds in GC)\n") != std::string::npos);
}

TEST_CASE("Guile 3's every-frame cumulative is available for byte-compatibility") {
  auto e = test::worked_example();
  FlatReportOptions o;
  o.labels = LabelStyle::Guile;
  o.cumulative = CumulativeMode::EveryFrame;
  CHECK(statprof_flat_report(e.profile, o).find(" 70.00      1.10      0.70  demo.lua:1:0:a\n") !=
        std::string::npos);
}

TEST_CASE("flat report with call counts - including a function whose count is unknown") {
  auto e = test::worked_example("");  // no source: bare names, as in the vector file
  Profile& p = e.profile;
  // Counts exist for a, b, main; "uncounted" was sampled by nobody and its count is unknown.
  p.enable_call_counts();
  p.add_call(e.main, false);
  p.add_call(e.a, false);
  p.add_call(e.a, true);
  p.add_call(e.b, false);
  std::string text = statprof_flat_report(p);
  std::string want = vector_section("3.0 flat, with call counts");
  // The vector's last line shows the 28-space layout of an unknown count; our three rows match
  // the first lines exactly.
  CHECK(text.substr(0, want.find("  0.00      0.00      0.00")) ==
        want.substr(0, want.find("  0.00      0.00      0.00")));
  CHECK(text.find("---\nSample count: 10\nTotal time: 1.0 seconds (0.0 seconds in GC)\n") != std::string::npos);
}

TEST_CASE("a known count is right-aligned in 7 - an unknown one prints as 28 spaces") {
  Profile p;
  p.total_seconds = 1.0;
  FunctionId f = p.add_function({"f", "", 0, 0, FunctionKind::Script});
  FunctionId u = p.add_function({"uncounted", "", 0, 0, FunctionKind::Script});
  const FunctionId fu[] = {f, u};
  p.add_sample(0, 0, 1, fu, 2);
  p.enable_call_counts();
  p.add_call(f, false);
  p.set_calls(u, std::nullopt);  // e.g. read from a file that did not record it
  std::string text = statprof_flat_report(p);
  CHECK(text.find("time   seconds    seconds   calls   procedure\n") != std::string::npos);
  CHECK(text.find("100.00      1.00      1.00" + std::string(28, ' ') + "uncounted\n") != std::string::npos);
  CHECK(text.find("  0.00      1.00      0.00       1  f\n") != std::string::npos);
}

TEST_CASE("an empty profile prints what Guile prints") {
  Profile p;
  CHECK(statprof_flat_report(p) == "No samples recorded.\n");
}

TEST_CASE("an empty profile still says why there may be no samples") {
  Profile p;
  p.runtime_note = "Reading Lua's internals is off";
  p.health.signal_lost_at = 0.25;
  p.health.signal_name = "SIGRTMAX-3";
  const std::string text = statprof_flat_report(p);
  CHECK(text.rfind("Reading Lua's internals is off\n", 0) == 0);
  CHECK(text.find("SIGRTMAX-3") != std::string::npos);
  const std::string last = "No samples recorded.\n";
  REQUIRE(text.size() > last.size());
  CHECK(text.compare(text.size() - last.size(), last.size(), last) == 0);
}

TEST_CASE("a newline in a function name cannot break the report's lines") {
  Profile p;
  p.total_seconds = 0.5;
  FunctionId f = p.add_function({"evil\nname", "", 0, 0, FunctionKind::Pseudo});
  p.add_sample(0, 0, 1, &f, 1);
  std::string text = statprof_flat_report(p);
  CHECK(text.find("evil name\n") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 6);
}

TEST_CASE("a JIT runtime's compiled share is a jit% column, and a runtime note heads the report") {
  Profile p;
  p.period_ns = 1'000'000;
  FunctionId hot = p.add_function({"hot", "a.lua", 1, 3, FunctionKind::Script});
  FunctionId cold = p.add_function({"cold", "a.lua", 5, 7, FunctionKind::Script});
  const FunctionId stack_hot[] = {cold, hot};
  const FunctionId stack_cold[] = {cold};
  for (int i = 0; i < 4; ++i) {
    p.add_jit_share(p.add_sample(0, 0, 1, stack_hot, 2), 1, i != 0);  // 3 of hot's 4 samples ran compiled
  }
  p.add_jit_share(p.add_sample(0, 0, 1, stack_cold, 1), 1, false);
  FunctionId gc = p.add_function({"(gc)", "", 0, 0, FunctionKind::Pseudo});
  const FunctionId stack_gc[] = {cold, gc};
  p.add_jit_share(p.add_sample(0, 0, 1, stack_gc, 2), 1, false);
  p.total_seconds = 0.006;
  std::string without_note = statprof_flat_report(p, {});
  CHECK(without_note.find("seconds   jit%  procedure\n") != std::string::npos);
  CHECK(without_note.find("     75  hot (a.lua:1)\n") != std::string::npos);
  CHECK(without_note.find("      0  cold (a.lua:5)\n") != std::string::npos);
  CHECK(without_note.find("      -  (gc)\n") != std::string::npos);  // never compiled script code
  p.runtime_note = "The JIT was off for this run.";
  CHECK(statprof_flat_report(p, {}).rfind("The JIT was off for this run.\n%", 0) == 0);
  // A runtime without a JIT prints the layout it always did.
  p.clear();
  CHECK(!p.jit_shares);
  CHECK(p.runtime_note.empty());
}
