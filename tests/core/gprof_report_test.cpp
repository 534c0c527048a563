#include <catch2/catch.hpp>

#include "example_profile.hpp"
#include "scriptprof/gprof_report.hpp"
#include "vector_file.hpp"

using namespace scriptprof;

namespace {
test::Example counted() {
  auto e = test::worked_example("");
  e.profile.enable_call_counts();
  e.profile.add_call(e.main, kNoFunction);
  e.profile.add_call(e.a, e.main);
  e.profile.add_call(e.a, e.a);
  e.profile.add_call(e.b, e.main);
  return e;
}
std::string section(const std::string& from, const std::string& to) {
  std::string v = test::formats_file("vectors/gprof_demo.txt");
  std::size_t a = from.empty() ? 0 : v.find(from);
  REQUIRE(a != std::string::npos);
  if (!from.empty()) a = v.find('\n', a) + 1;
  std::size_t b = v.find(to, a);
  REQUIRE(b != std::string::npos);
  return v.substr(a, b - a);
}
}  // namespace

TEST_CASE("gprof flat profile of the worked example matches the vector (FORMATS 2.4)") {
  CHECK(gprof_flat_report(counted().profile) + "\n" == section("", "---- call graph ----"));
}

TEST_CASE("gprof call graph of the worked example matches the vector (FORMATS 2.4)") {
  CHECK(gprof_call_graph(counted().profile) + "\n" == section("---- call graph ----", "---- cycle header"));
}

TEST_CASE("gprof without call counts: the called column is blank on every line, arcs too") {
  // Samples are not calls: gprof leaves an arc it has no count for blank, and so do we.
  auto e = test::worked_example("");
  std::string graph = gprof_call_graph(e.profile);
  CHECK(graph.find("[1]    100.0    0.00    1.00" + std::string(17, ' ') + "main [1]\n") != std::string::npos);
  CHECK(graph.find("                0.70    0.00" + std::string(21, ' ') + "a [2]\n") != std::string::npos);
  CHECK(graph.find("/") == std::string::npos);  // no n/m anywhere
  std::string flat = gprof_flat_report(e.profile);
  CHECK(flat.find("  %   cumulative   self              self     total           \n"
                  " time   seconds   seconds    calls  Ts/call  Ts/call  name    \n") != std::string::npos);
  CHECK(flat.find(" 70.00      0.70     0.70                             a\n") != std::string::npos);
}

TEST_CASE("gprof reports of an empty profile say nothing was accumulated") {
  Profile p;
  CHECK(gprof_flat_report(p).find(" no time accumulated\n") != std::string::npos);
  CHECK(gprof_call_graph(p).find(" no time propagated\n") != std::string::npos);
}
