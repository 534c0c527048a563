#include <catch2/catch.hpp>

#include <random>

#include "example_profile.hpp"
#include "profile_equivalence.hpp"
#include "scriptprof/folded_stacks.hpp"
#include "vector_file.hpp"

using namespace scriptprof;

namespace {
// The bare format of FORMATS 7 (no "# scriptprof" time line), as the vectors have it.
FoldedWriteOptions bare() {
  FoldedWriteOptions o;
  o.time_scale = false;
  return o;
}

Profile read_ok(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  Profile p;
  std::string error;
  INFO(text);
  bool ok = read_folded(text, &p, &error, warnings);
  INFO(error);
  REQUIRE(ok);
  return p;
}
}  // namespace

TEST_CASE("folded stacks of the worked example match the vector (FORMATS 7.3)") {
  auto e = test::worked_example("");
  CHECK(write_folded(e.profile, bare()) == test::formats_file("vectors/out_folded.txt"));
}

TEST_CASE("folded stacks read back into the same profile") {
  auto e = test::worked_example("");
  e.profile.total_seconds = 1.23;  // measured time is not the period times the samples
  e.profile.clock = ClockKind::Wall;
  std::vector<std::string> warnings;
  Profile back = read_ok(write_folded(e.profile), &warnings);
  CHECK(warnings.empty());
  CHECK(back.period_ns == e.profile.period_ns);
  CHECK(back.total_seconds == e.profile.total_seconds);
  CHECK(back.clock == ClockKind::Wall);
  CHECK(test::difference(e.profile, back) == "");
  CHECK(write_folded(back) == write_folded(e.profile));
}

// Whether the GC seconds are the collector's (gc_measured) travels with them: a PUC Lua run
// read back still says its GC time was not measured.
TEST_CASE("folded: GC time not measured stays so when read back") {
  auto e = test::worked_example("");
  e.profile.gc_measured = false;
  e.profile.gc_seconds = 0.125;
  Profile back = read_ok(write_folded(e.profile));
  CHECK_FALSE(back.gc_measured);
  CHECK(back.gc_seconds == 0.125);
  e.profile.gc_measured = true;
  CHECK(read_ok(write_folded(e.profile)).gc_measured);
}

TEST_CASE("folded: a file without its time line is read with a guess, and says so") {
  auto e = test::worked_example("");
  std::vector<std::string> warnings;
  Profile back = read_ok(write_folded(e.profile, bare()), &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "the file does not say how long a sample is: assuming 10000 us a sample");
  CHECK(back.total_seconds == Approx(static_cast<double>(back.sample_weight()) * 0.01));
}

TEST_CASE("folded: lines cut from a file keep the seconds a sample stands for") {
  auto e = test::worked_example("");
  e.profile.total_seconds = 2.0;  // 10 samples: 0.2 s each
  std::string text = write_folded(e.profile);
  std::string cut = text.substr(0, text.rfind("main;b"));  // drop main;b's 3 samples
  Profile back = read_ok(cut);
  CHECK(back.sample_weight() == 7);
  CHECK(back.total_seconds == Approx(1.4));
}

TEST_CASE("names that would break a folded line are made safe (FORMATS 7.4)") {
  Profile p;
  FunctionId semi = p.add_function({"a;b", "", 0, 0, FunctionKind::Named});
  FunctionId digits = p.add_function({"worker 2", "", 0, 0, FunctionKind::Named});
  FunctionId empty = p.add_function({"", "", 0, 0, FunctionKind::Named});
  FunctionId nl = p.add_function({"x\ny", "", 0, 0, FunctionKind::Named});
  const FunctionId s1[] = {semi, digits};
  const FunctionId s2[] = {digits, empty, nl};
  p.add_sample(0, 0, 2, s1, 2);
  p.add_sample(0, 0, 1, s2, 3);
  p.add_sample(0, 0, 4, nullptr, 0);
  CHECK(write_folded(p, bare()) == "(idle) 4\na:b;worker_2 2\nworker 2;?;x y 1\n");
  FoldedWriteOptions no_idle = bare();
  no_idle.idle_frame = false;
  CHECK(write_folded(p, no_idle) == "a:b;worker_2 2\nworker 2;?;x y 1\n");
  Profile back = read_ok(write_folded(p));
  CHECK(back.sample_weight() == 7);
  CHECK(back.empty_weight() == 4);  // "(idle)" alone is a sample outside any function
}

TEST_CASE("thread roots prefix each stack") {
  auto e = test::worked_example("");
  e.profile.add_thread(0, "main");
  FoldedWriteOptions o = bare();
  o.thread_root = true;
  CHECK(write_folded(e.profile, o) == "thread 0: main;main;a 3\nthread 0: main;main;a;a 4\nthread 0: main;main;b 3\n");
}

TEST_CASE("what flamegraph.pl accepts is read: duplicates add - CR - differential - decimals") {
  std::vector<std::string> warnings;
  Profile p = read_ok("a;b 2\r\na;b 3\n\nc 1 4\nd;e 2.6\nf with spaces;g 1\n", &warnings);
  CHECK(p.sample_weight() == 5 + 4 + 3 + 1);
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0].rfind("line 5: count 2.6", 0) == 0);
  CHECK(warnings[1].rfind("the file does not say how long a sample is", 0) == 0);
  CHECK(p.functions.label(static_cast<FunctionId>(p.functions.size() - 2)) == "f with spaces");
}

TEST_CASE("folded: counts past 2^53 read back exactly") {
  // Found by fuzz_roundtrip: a count read as a double came back one more than written.
  Profile p = read_ok("a 9555555556555555\n(idle) 9007199254740993\n");
  CHECK(p.sample_weight() == 9555555556555555ull + 9007199254740993ull);
  CHECK(p.empty_weight() == 9007199254740993ull);
}

TEST_CASE("malformed folded lines are refused with the line number") {
  Profile p;
  std::string error;
  CHECK_FALSE(read_folded("a;b 1\nno count here\n", &p, &error));
  CHECK(error == "line 2: expected \"frame;frame;... count\", got \"no count here\"");
  CHECK_FALSE(read_folded("42\n", &p, &error));
  CHECK(error == "line 1: expected \"frame;frame;... count\", got \"42\"");
  CHECK_FALSE(read_folded("a 1.2.3\n", &p, &error));
  CHECK(error.rfind("line 1:", 0) == 0);
}

TEST_CASE("random profiles survive folded write and read") {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    Profile p;
    std::vector<FunctionId> fns;
    for (int i = 0; i < 15; ++i)
      fns.push_back(p.add_function({"f" + std::to_string(i) + (i % 3 ? " (x.lua:" + std::to_string(i) + ")" : " [C]"),
                                    "", 0, 0, FunctionKind::Named}));
    for (int s = 0; s < 1000; ++s) {
      std::vector<FunctionId> stack(1 + rng() % 10);
      for (auto& f : stack) f = fns[rng() % fns.size()];
      p.add_sample(0, 0, 1 + rng() % 3, stack.data(), stack.size());
    }
    Profile back = read_ok(write_folded(p));
    CHECK(test::difference(p, back, true, false) == "");
  }
}
