#include <catch2/catch.hpp>

#include <map>

#include "example_profile.hpp"
#include "scriptprof/statprof_tree_report.hpp"
#include "vector_file.hpp"

using namespace scriptprof;

namespace {

// Builds stacks from letters: "mabcabcd" with m = main etc.
struct Letters {
  Profile p;
  std::map<char, FunctionId> ids;
  std::vector<FunctionId> stack(const std::string& s) {
    std::vector<FunctionId> out;
    for (char c : s) {
      if (!ids.count(c)) ids[c] = p.add_function({std::string(1, c), "", 0, 0, FunctionKind::Named});
      out.push_back(ids[c]);
    }
    return out;
  }
  std::string collapsed(const std::string& s) {
    std::string out;
    for (const auto& g : collect_cycles(stack(s))) {
      if (!out.empty()) out += " ";
      if (g.size() > 1) out += "(";
      for (std::size_t i = 0; i < g.size(); ++i) out += (i ? " " : "") + p.functions.label(g[i]);
      if (g.size() > 1) out += ")";
    }
    return out;
  }
};

Profile guile_like(const std::string& file, std::initializer_list<std::pair<std::vector<std::pair<const char*, int>>, int>> stacks,
                   double total) {
  Profile p;
  p.total_seconds = total;
  std::map<std::string, FunctionId> ids;
  for (const auto& [frames, times] : stacks) {
    std::vector<FunctionId> s;
    for (const auto& [name, line] : frames) {
      if (!ids.count(name)) ids[name] = p.add_function({name, file, line, 0, FunctionKind::Script});
      s.push_back(ids[name]);
    }
    for (int i = 0; i < times; ++i) p.add_sample(0, 0, 1, s.data(), s.size());
  }
  return p;
}

}  // namespace

TEST_CASE("collect_cycles collapses recursion as Guile does (FORMATS 1.5)") {
  Letters l;
  CHECK(l.collapsed("mabcabcd") == "m (b a c) d");
  CHECK(l.collapsed("mabcdabcd") == "m (c b a d)");
  CHECK(l.collapsed("maaab") == "m a b");
  CHECK(l.collapsed("mababc") == "m (a b) c");
  CHECK(l.collapsed("mpqpqp") == "m (p q) p");
  CHECK(l.collapsed("maabaab") == "m (a b)");
  CHECK(l.collapsed("mabac") == "m a b a c");
  CHECK(l.collapsed("") == "");
}

TEST_CASE("tree display reproduces real Guile 3.0.8 output (guile-tree.txt)") {
  Profile p = guile_like("work.scm", {{{{"main", 8}, {"a", 2}}, 30}, {{{"main", 8}, {"a", 2}, {"a", 2}}, 26},
                                      {{{"main", 8}, {"b", 6}}, 23}}, 1.251937557);
  CHECK(statprof_tree_report(p, LabelStyle::Guile) == test::formats_file("guile-3.0.8-output/guile-tree.txt"));
}

TEST_CASE("tree display with mutual recursion reproduces guile-tree-cycles.txt") {
  Profile p = guile_like("cycwork.scm",
                         {{{{"main", 5}, {"p", 2}, {"q", 3}, {"p", 2}, {"q", 3}, {"p", 2}}, 23},
                          {{{"main", 5}, {"leaf", 4}}, 19}}, 0.673784547);
  CHECK(statprof_tree_report(p, LabelStyle::Guile) == test::formats_file("guile-3.0.8-output/guile-tree-cycles.txt"));
}

TEST_CASE("tree display of the worked example (FORMATS 1.8)") {
  auto e = test::worked_example();
  CHECK(statprof_tree_report(e.profile, LabelStyle::Guile) ==
        "100.0% main at demo.lua:9:0\n  70.0% a at demo.lua:1:0\n  30.0% b at demo.lua:5:0\n"
        "---\nSample count: 10\nTotal time: 1.0 seconds (0.0 seconds in GC)\n");
}

TEST_CASE("tree display of an empty profile is the footer alone") {
  Profile p;
  CHECK(statprof_tree_report(p) == "---\nSample count: 0\nTotal time: 0.0 seconds (0.0 seconds in GC)\n");
}

TEST_CASE("anomalies list functions sampled but never called") {
  auto e = test::worked_example("");
  e.profile.total_seconds = 9.624543408;
  CHECK(statprof_anomalies_report(e.profile) == "Total time: 9.624543408\nSample count: 10\n");
  e.profile.enable_call_counts();
  e.profile.add_call(e.main, false);
  e.profile.add_call(e.a, false);
  CHECK(statprof_anomalies_report(e.profile) == "==[b 0 3]\nTotal time: 9.624543408\nSample count: 10\n");
}

TEST_CASE("Guile 2 flat layouts match the vector (FORMATS 1.4)") {
  auto e = test::worked_example("");
  FlatReportOptions o;
  o.layout = FlatLayout::Guile2;
  std::string vec = test::formats_file("vectors/statprof_demo.txt");
  auto section = [&](const std::string& title) {
    std::size_t a = vec.find("=== " + title + "\n");
    REQUIRE(a != std::string::npos);
    a = vec.find('\n', a) + 1;
    return vec.substr(a, vec.find("===", a) - a);
  };
  std::string plain = statprof_flat_report(e.profile, o);
  CHECK(plain.substr(0, plain.find("---")) == section("2.0 flat, no call counts"));
  e.profile.enable_call_counts();
  e.profile.add_call(e.main, false);
  e.profile.add_call(e.a, false);
  e.profile.add_call(e.a, true);
  e.profile.add_call(e.b, false);
  std::string counted = statprof_flat_report(e.profile, o);
  CHECK(counted.substr(0, counted.find("---")) == section("2.0 flat, with call counts"));
}
