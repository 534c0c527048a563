#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "example_profile.hpp"
#include "profile_equivalence.hpp"
#include "scriptprof/lispworks_tree.hpp"
#include "scriptprof/statprof_flat_report.hpp"

using namespace scriptprof;

namespace {

std::string vector_file(const std::string& name) {
  std::ifstream in(std::string(SCRIPTPROF_FORMATS_DIR) + "/vectors/" + name, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

test::Example counted_example() {
  auto e = test::worked_example("");  // bare names, as in the vector
  e.profile.enable_call_counts();
  e.profile.add_call(e.main, false);
  e.profile.add_call(e.a, false);
  e.profile.add_call(e.a, true);
  e.profile.add_call(e.b, false);
  return e;
}

Profile read_ok(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  Profile p;
  std::string error;
  INFO(text);
  bool ok = read_lispworks_tree(text, &p, &error, warnings);
  INFO(error);
  REQUIRE(ok);
  return p;
}

std::string read_error(const std::string& text) {
  Profile p;
  std::string error;
  CHECK_FALSE(read_lispworks_tree(text, &p, &error));
  return error;
}

}  // namespace

TEST_CASE("LispWorks tree of the worked example matches the vector (FORMATS 4.6)") {
  auto e = counted_example();
  LispWorksWriteOptions o;
  o.tree_name = "demo.lua run 1";
  o.metadata = false;
  CHECK(write_lispworks_tree(e.profile, o) == vector_file("out_lw.txt"));
}

TEST_CASE("LispWorks tree with a thread level (FORMATS 4.3)") {
  auto e = counted_example();
  e.profile.add_thread(0, "main");
  LispWorksWriteOptions o;
  o.tree_name = "demo.lua run 1";
  o.metadata = false;
  o.thread_level = true;
  CHECK(write_lispworks_tree(e.profile, o) ==
        "LispWorks Profiler Tree: demo.lua run 1\n"
        ";Depth|Count|Call-Count|Seen-Count|Top-Count|Name\n"
        "0|10|0|10|0|\"demo.lua run 1\"\n"
        "1|10|0|10|0|\"thread 0: main\"\n"
        "2|10|1|10|0|main\n"
        "3|7|2|7|7|a\n"
        "4|4|2|7|7|a\n"
        "3|3|1|3|3|b\n");
}

TEST_CASE("reading the vector gives back the worked example") {
  Profile p = read_ok(vector_file("out_lw.txt"));
  auto e = counted_example();
  e.profile.total_seconds = 1.0;
  p.total_seconds = 1.0;  // no metadata in the vector: time is the default period's
  p.period_ns = e.profile.period_ns;
  CHECK(test::difference(e.profile, p, false).empty());
  CHECK(p.name == "demo.lua run 1");
  // Every report works on a read profile.
  CHECK(statprof_flat_report(p).find(" 70.00      0.70      0.70       2  a\n") != std::string::npos);
}

TEST_CASE("write then read then write is identical - with times - threads - calls") {
  auto e = counted_example();
  e.profile.name = "run";
  const FunctionId other[] = {e.b};
  e.profile.add_sample(3, 0, 5, other, 1);  // a second thread
  e.profile.add_thread(3, "worker");
  e.profile.add_sample(0, 0, 2, nullptr, 0);  // samples outside any function
  std::string first = write_lispworks_tree(e.profile);
  Profile back = read_ok(first);
  CHECK(write_lispworks_tree(back) == first);
  CHECK(test::difference(e.profile, back) == "");
  CHECK(back.total_seconds == e.profile.total_seconds);
  CHECK(back.period_ns == e.profile.period_ns);
  REQUIRE(back.threads.size() == 2);
  CHECK(back.threads[1].name == "worker");
}

TEST_CASE("hostile names survive write and read unchanged (FORMATS 4.5)") {
  const std::vector<std::string> names = {
      "a|b|c", "\"quoted", "\\backslash", "say \"hi\"", "semi;colon", "ünïcödé ✓", "", " spaces ",
      "0|1|2|3|4|5", "\"\"", "\\\"", "(idle)"};
  Profile p;
  p.total_seconds = 1.0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    FunctionKind kind = names[i] == "(idle)" ? FunctionKind::Pseudo : FunctionKind::Named;
    FunctionId f = p.add_function({names[i], "", 0, 0, kind});
    FunctionId root = p.add_function({"root" + std::to_string(i), "", 0, 0, FunctionKind::Named});
    const FunctionId stack[] = {root, f};
    p.add_sample(0, 0, i + 1, stack, 2);
  }
  Profile back = read_ok(write_lispworks_tree(p));
  CHECK(test::difference(p, back) == "");
  for (FunctionId f = 0; f < back.functions.size(); ++f) {
    if (back.functions.info(f).name == "(idle)") CHECK(back.functions.info(f).kind == FunctionKind::Pseudo);
  }
}

TEST_CASE("a newline in a name becomes a space: the one lossy case") {
  Profile p;
  FunctionId f = p.add_function({"two\nlines\r", "", 0, 0, FunctionKind::Named});
  p.add_sample(0, 0, 1, &f, 1);
  Profile back = read_ok(write_lispworks_tree(p));
  REQUIRE(back.functions.size() == 1);
  CHECK(back.functions.info(0).name == "two lines ");
}

// Two functions whose names meet once written ("a\r1" and "a 1") stay two: the reader knows a
// function by its name, and would add their counts up and refuse the file (a fuzzer found it).
TEST_CASE("names that a newline's space makes one are told apart in the file") {
  Profile p;
  const FunctionId main = p.add_function({"main", "", 0, 0, FunctionKind::Named});
  const FunctionId cr = p.add_function({"a\r1", "", 0, 0, FunctionKind::Named});
  const FunctionId space = p.add_function({"a 1", "", 0, 0, FunctionKind::Named});
  const FunctionId first[] = {main, cr}, second[] = {main, space}, both[] = {main, cr, space};
  p.add_sample(0, 0, 5, first, 2);
  p.add_sample(0, 0, 3, second, 2);
  p.add_sample(0, 0, 2, both, 3);
  Profile back = read_ok(write_lispworks_tree(p));
  REQUIRE(back.functions.size() == 3);
  CHECK(back.sample_weight() == 10);
  std::vector<std::string> names;
  for (FunctionId f = 0; f < back.functions.size(); ++f) names.push_back(back.functions.info(f).name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"a 1", "a 1 #2", "main"});
}

TEST_CASE("random profiles round-trip exactly") {
  std::mt19937 rng(2024);
  const std::string alphabet = "ab|\"\\; \t:xé#0123456789()";
  for (int round = 0; round < 30; ++round) {
    Profile p;
    p.total_seconds = 0.5 * round;
    p.period_ns = 1'000'000 + static_cast<std::uint64_t>(round);
    std::vector<FunctionId> fns;
    for (int i = 0; i < 25; ++i) {
      std::string name;
      for (std::size_t k = rng() % 8; k > 0; --k) name += alphabet[rng() % alphabet.size()];
      name += "#" + std::to_string(i);  // distinct labels, as the profiler guarantees
      fns.push_back(p.add_function({name, "", 0, 0, rng() % 5 ? FunctionKind::Named : FunctionKind::Pseudo}));
    }
    if (round % 2) p.enable_call_counts();
    for (int s = 0; s < 400; ++s) {
      std::vector<FunctionId> stack(rng() % 12);
      for (auto& f : stack) f = fns[rng() % (rng() % 3 ? 6 : fns.size())];
      p.add_sample(static_cast<std::uint32_t>(rng() % (round % 3 + 1)), 0, 1 + rng() % 4, stack.data(), stack.size());
      if (p.calls_counted() && !stack.empty()) p.add_call(stack.back(), false);
    }
    for (const auto& r : p.tree.roots()) p.add_thread(r.first, "t" + std::to_string(r.first));
    std::string text = write_lispworks_tree(p);
    Profile back = read_ok(text);
    INFO("round " << round);
    CHECK(test::difference(p, back) == "");
    CHECK(write_lispworks_tree(back) == text);
  }
}

TEST_CASE("a tree far deeper than any C stack is written and read without recursion") {
  Profile p;
  FunctionId f = p.add_function({"deep", "", 0, 0, FunctionKind::Named});
  std::vector<FunctionId> stack(200000, f);
  p.add_sample(0, 0, 1, stack.data(), stack.size());
  Profile back = read_ok(write_lispworks_tree(p));
  CHECK(back.counts(0).cumulative == 1);
  CHECK(back.counts(0).occurrences == 200000);
}

TEST_CASE("malformed trees are refused with the line and the reason") {
  const std::string head = "LispWorks Profiler Tree: t\n";
  CHECK(read_error("") == "empty file: not a LispWorks profiler tree");
  CHECK(read_error("Some other file\n0|1|0|1|0|x\n") ==
        "line 1: not a LispWorks profiler tree (the first line must contain \"LispWorks Profiler Tree\")");
  CHECK(read_error(head + "0|1|0|1|0\n") ==
        "line 2: expected 6 fields separated by '|' (Depth|Count|Call-Count|Seen-Count|Top-Count|Name), found 5");
  CHECK(read_error(head + "0|-1|0|1|0|x\n") == "line 2: Count must be a non-negative decimal integer, got '-1'");
  CHECK(read_error(head + "0| 1|0|1|0|x\n") == "line 2: Count must be a non-negative decimal integer, got ' 1'");
  CHECK(read_error(head + "0|+1|0|1|0|x\n") == "line 2: Count must be a non-negative decimal integer, got '+1'");
  CHECK(read_error(head + "0||0|1|0|x\n") == "line 2: Count must be a non-negative decimal integer, got ''");
  CHECK(read_error(head + "0|99999999999999999999|0|1|0|x\n") ==
        "line 2: Count must be a non-negative decimal integer, got '99999999999999999999'");
  CHECK(read_error(head + "1|1|0|1|0|x\n") == "line 2: the first node must have depth 0 (the root), got 1");
  CHECK(read_error(head + "0|1|0|1|0|r\n1|1|0|1|0|a\n3|1|0|1|0|b\n") ==
        "line 4: depth 3 after depth 1 (a node's parent must precede it)");
  CHECK(read_error(head + "0|1|0|1|0|r\n0|1|0|1|0|r2\n") == "line 3: a second root (depth 0)");
  CHECK(read_error(head + "0|1|0|1|0|\"open\n") == "line 2: unterminated string name \"open");
  CHECK(read_error(head + "0|1|0|1|0|\"a\"b\n") == "line 2: unterminated string name \"a\"b");
  CHECK(read_error(head + ";only comments\n") == "line 2: no root node");
  Profile p;
  std::string error;
  ReadLimits tight;
  tight.max_depth = 2;
  CHECK_FALSE(read_lispworks_tree(head + "0|1|0|1|0|r\n1|1|0|1|0|a\n2|1|0|1|0|b\n3|1|0|1|0|c\n", &p, &error, nullptr, tight));
  CHECK(error == "line 5: depth 3 exceeds the limit of 2");
}

TEST_CASE("what the format allows is accepted: comments - CR LF - BOM - blank lines - no name") {
  std::vector<std::string> warnings;
  Profile p = read_ok("\xEF\xBB\xBFLispWorks Profiler Tree\r\n; a comment\r\n\r\n0|3|0|3|0|\"\"\r\n1|3|0|3|3|\r\n", &warnings);
  CHECK(p.name.empty());
  CHECK(p.sample_weight() == 3);
  REQUIRE(p.functions.size() == 1);
  CHECK(p.functions.info(0).name.empty());
  // LispWorks' own trees say nothing of time: the reader guesses 10 ms a sample, and says so.
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "the file does not say how long a sample is: assuming 10000 us a sample");
  CHECK(p.total_seconds == Approx(0.03));
}

TEST_CASE("inconsistent counts are kept with a warning") {
  std::vector<std::string> warnings;
  Profile p = read_ok("LispWorks Profiler Tree: t\n0|2|0|2|0|\"t\"\n1|5|0|5|5|a\n1|1|0|1|1|b\n", &warnings);
  CHECK(p.sample_weight() == 6);
  REQUIRE(warnings.size() == 3);
  CHECK(warnings[0] == "line 2: children's counts add up to 6, above the node's 2");
  CHECK(warnings[2] == "line 2: the root's count 2 differs from the samples below it (6)");
}

TEST_CASE("fuzzer regression - a pseudo frame named like a thread node keeps every sample") {
  // Found by fuzz_lispworks: a top-level quoted "thread 1: main" that is not a thread level.
  std::string input =
      "LispWorks Profiler Tree:ck=wall\n0|5|0|5|0|\"t\"\n1|2|0|5|0|\"thread 1: main\"\n"
      "2|4|2|4|4|3|\\q\n1|0|1|0|0|\"(idle)\"\n";
  std::vector<std::string> warnings;
  Profile p = read_ok(input, &warnings);
  Profile back = read_ok(write_lispworks_tree(p));
  CHECK(back.sample_weight() == p.sample_weight());
  // "(idle)" has a call count but no samples: a tree has no node to carry it. The paths match.
  CHECK(test::paths(p, false) == test::paths(back, false));
}

TEST_CASE("fuzzer regression - a pseudo frame whose name becomes a thread's once written keeps the thread level") {
  // Found by fuzz_lispworks: "thread\r1" is no thread node, but written (CR as a space) it
  // read back as one, and its 5 samples became samples outside any function.
  const std::string input = "LispWorks Profiler Tree\n0|9|0|5|0|\n1|5|0|0|5|\"thread\r1\"\n";
  Profile p = read_ok(input);
  Profile back = read_ok(write_lispworks_tree(p));
  CHECK(back.sample_weight() == p.sample_weight());
  CHECK(back.empty_weight() == p.empty_weight());  // 4 outside any function, not 9
  // The frame keeps its 5 samples, under its name as written (CR and LF cannot be: FORMATS 4.5).
  REQUIRE(back.functions.size() == 1);
  CHECK(back.functions.info(0).name == "thread 1");
  CHECK(back.counts(0).self == 5);
}
