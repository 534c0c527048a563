#include <catch2/catch.hpp>

#include "example_profile.hpp"
#include "scriptprof/allegro_report.hpp"
#include "vector_file.hpp"

using namespace scriptprof;

TEST_CASE("Allegro flat profile and call graph of the worked example match the vector (FORMATS 3.5)") {
  auto e = test::worked_example("");
  CHECK(allegro_flat_report(e.profile) + "\n" + allegro_call_graph(e.profile) ==
        test::formats_file("vectors/out_allegro.txt"));
}

TEST_CASE("Allegro thresholds suppress rows - entries and lines") {
  auto e = test::worked_example("");
  AllegroOptions o;
  o.significance_threshold = 0.5;  // only functions with at least half the time
  std::string flat = allegro_flat_report(e.profile, o);
  CHECK(flat.find("Times below 50.0% will be suppressed.") != std::string::npos);
  CHECK(flat.find("  a\n") != std::string::npos);
  CHECK(flat.find("  b\n") == std::string::npos);
  std::string graph = allegro_call_graph(e.profile, o);
  CHECK(graph.find("  30.0   30.0      0.3") == std::string::npos);  // b's entry (30%) is gone
  CHECK(graph.find("      b\n") != std::string::npos);               // main's child line stays
  AllegroOptions lines;
  lines.fractional_significance_threshold = 0.6;  // a's parent a (57.1%) goes, main (100%) stays
  graph = allegro_call_graph(e.profile, lines);
  CHECK(graph.find("0.4   57.1r") == std::string::npos);
  CHECK(graph.find("0.7  100.0r     main") != std::string::npos);
}

TEST_CASE("Allegro names C functions as strings and shows exact calls") {
  Profile p;
  p.total_seconds = 1.0;
  FunctionId lua_f = p.add_function({"work", "w.lua", 3, 9, FunctionKind::Script});
  FunctionId c_f = p.add_function({"string.rep", "", 0, 0, FunctionKind::Native});
  const FunctionId s[] = {lua_f, c_f};
  for (int i = 0; i < 9; ++i) p.add_sample(0, 0, 1, s, 2);
  p.add_sample(0, 0, 1, &lua_f, 1);
  p.enable_call_counts();
  p.add_call(c_f, lua_f);
  p.add_call(c_f, lua_f);
  std::string flat = allegro_flat_report(p);
  CHECK(flat.find(" 90.0  90.0    0.1    0.1        2      45      45  \"string.rep\"\n") != std::string::npos);
  CHECK(flat.find("work (w.lua:3)\n") != std::string::npos);
}

TEST_CASE("hidden functions fold into their caller - shown with ... (FORMATS 3.3)") {
  Profile p;
  FunctionId main = p.add_function({"main", "", 0, 0, FunctionKind::Named});
  FunctionId foo = p.add_function({"foo", "", 0, 0, FunctionKind::Named});
  FunctionId bar = p.add_function({"bar", "", 0, 0, FunctionKind::Named});
  FunctionId baz = p.add_function({"baz", "", 0, 0, FunctionKind::Named});
  const FunctionId to_bar[] = {main, foo, bar}, to_baz[] = {main, foo, bar, baz};
  for (int i = 0; i < 6; ++i) p.add_sample(0, 0, 1, to_bar, 3);
  for (int i = 0; i < 4; ++i) p.add_sample(0, 0, 1, to_baz, 4);
  AllegroOptions o;
  o.hidden = {"bar"};
  std::string flat = allegro_flat_report(p, o);
  CHECK(flat.find(" 60.0  60.0    0.1    0.1                           ... foo\n") != std::string::npos);
  CHECK(flat.find(" 40.0 100.0    0.0    0.0                           baz\n") != std::string::npos);
  CHECK(flat.find("bar") == std::string::npos);
  std::string graph = allegro_call_graph(p, o);
  // foo's entry: baz is its child now, and the samples that ended in bar are a "..." child.
  CHECK(graph.find("  60.0  100.0      0.1   60.0    ... foo\n"
                   "                   0.1   60.0      ...\n"
                   "                   0.0   40.0      baz\n") != std::string::npos);
  CHECK(graph.find("0.0  100.0      ... foo\n  40.0   40.0") != std::string::npos);  // baz's parent
}
