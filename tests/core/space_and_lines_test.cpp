// Space profiles (Allegro's Kbytes variants, statprof layout) and per-line attribution.
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "function_lookup.hpp"
#include "scriptprof/allegro_report.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/allocation_countdown.hpp"
#include "scriptprof/annotated_source.hpp"
#include "scriptprof/hidden_functions.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/statprof_flat_report.hpp"

using namespace scriptprof;

namespace {

// The seed's space example (FORMATS 3.1): FOO conses 56 Kbytes and calls BAR, which makes a
// 32 Kbyte vector; the allocating runtime functions are hidden.
Profile seed_space_profile() {
  Profile p;
  p.clock = ClockKind::Alloc;
  FunctionId foo = p.add_function({"FOO", "", 0, 0, FunctionKind::Named});
  FunctionId bar = p.add_function({"BAR", "", 0, 0, FunctionKind::Named});
  FunctionId cons = p.add_function({"cons", "", 0, 0, FunctionKind::Native});
  FunctionId vec = p.add_function({"make_svector", "", 0, 0, FunctionKind::Native});
  const FunctionId a[] = {foo, cons}, b[] = {foo, bar, vec};
  for (int i = 0; i < 7; ++i) p.add_sample(0, 0, 8 * 1024, a, 2);
  for (int i = 0; i < 4; ++i) p.add_sample(0, 0, 8 * 1024, b, 3);
  return p;
}

}  // namespace

TEST_CASE("Allegro flat space profile speaks Kbytes (FORMATS 3.1 space variant)") {
  Profile p = seed_space_profile();
  AllegroOptions o;
  o.hidden = {"cons", "make_svector"};
  std::string flat = allegro_flat_report(p, o);
  CHECK(flat.rfind("Sample represents 88.0 Kbytes of space allocated (out of a total of 88.0)\n"
                   "Mem.s below 1.0% will be suppressed.\n\n", 0) == 0);
  CHECK(flat.find(" Mem.  Cum.  Kbyte  Kbyte    calls by/call by/call  name\n") != std::string::npos);
  CHECK(flat.find(" 63.6  63.6     56     88                           ... FOO\n") != std::string::npos);
  CHECK(flat.find(" 36.4 100.0     32     32                           ... BAR\n") != std::string::npos);
  CHECK(flat.find("secs") == std::string::npos);
}

TEST_CASE("Allegro space call graph drops the time line and prints whole Kbytes") {
  Profile p = seed_space_profile();
  std::string graph = allegro_call_graph(p);
  CHECK(graph.rfind("Total times below 1.0% will be suppressed.\n"
                    "Parent and child mem.s less 2.0% of the node will be suppressed.\n"
                    "Sample represents 88.0 Kbytes of space allocated (out of a total of 88.0)\n", 0) == 0);
  CHECK(graph.find("  Mem.   Mem.    Kbyte       %     Child\n") != std::string::npos);
  CHECK(graph.find("   0.0  100.0       88    0.0    FOO\n") != std::string::npos);
  CHECK(graph.find("                56   63.6      \"cons\"\n") != std::string::npos);
}

TEST_CASE("statprof flat layout of a space profile shows Kbytes and the total allocated") {
  Profile p = seed_space_profile();
  p.health.samples_taken = 11;
  std::string flat = statprof_flat_report(p);
  CHECK(flat.rfind("%     cumulative   self             \nspace    Kbytes     Kbytes  procedure\n", 0) == 0);
  CHECK(flat.find(" 63.64     56.00     56.00  \"cons\"\n") == std::string::npos);  // labels are plain
  CHECK(flat.find(" 63.64     56.00     56.00  cons [C]\n") != std::string::npos);
  CHECK(flat.find("---\nSample count: 11\nTotal allocated: 88.00 Kbytes (sampled)\n") != std::string::npos);
  CHECK(flat.find("seconds") == std::string::npos);
}

TEST_CASE("gprof styles refuse a space profile with a pointer to the styles that fit") {
  Profile p = seed_space_profile();
  std::string out, error;
  CHECK_FALSE(render_report(p, "gprof", &out, &error));
  CHECK(error.find("allegro") != std::string::npos);
  CHECK(render_report(p, "allegro", &out, &error));
}

TEST_CASE("hidden packages match a source or name prefix") {
  Profile p;
  FunctionId lib = p.add_function({"helper", "lib/util.lua", 3, 9, FunctionKind::Script});
  FunctionId rep = p.add_function({"string.rep", "", 0, 0, FunctionKind::Native});
  FunctionId app = p.add_function({"main", "app.lua", 1, 5, FunctionKind::Script});
  CHECK(in_package(p, lib, {"lib/"}));
  CHECK(in_package(p, rep, {"lib/", "string."}));
  CHECK_FALSE(in_package(p, app, {"lib/", "string.", ""}));
  const FunctionId s[] = {app, lib, rep};
  for (int i = 0; i < 4; ++i) p.add_sample(0, 0, 1, s, 3);
  AllegroOptions o;
  o.hidden_packages = {"lib/", "string."};
  std::string flat = allegro_flat_report(p, o);
  CHECK(flat.find("... main (app.lua:1)\n") != std::string::npos);
  CHECK(flat.find("helper") == std::string::npos);
}

TEST_CASE("line counts - self on the leaf line and cumulative once per stack") {
  Profile p;
  FunctionId f = p.add_function({"fib", "fib.lua", 1, 4, FunctionKind::Script});
  FunctionId g = p.add_function({"g", "fib.lua", 6, 8, FunctionKind::Script});
  const FunctionId rec[] = {f, f, f}, call[] = {f, g};
  const int rec_lines[] = {3, 3, 2}, call_lines[] = {3, 7};
  p.add_sample(0, 0, 2, rec, 3, rec_lines);
  p.add_sample(0, 0, 1, call, 2, call_lines);
  p.add_sample(0, 0, 5, call, 2, nullptr);  // no line information: counts only
  auto lines = p.line_counts(f);
  REQUIRE(lines.size() == 2);
  CHECK(lines[2].self == 2);
  CHECK(lines[2].cumulative == 2);
  CHECK(lines[3].self == 0);
  CHECK(lines[3].cumulative == 3);  // twice on the recursive stack, counted once
  CHECK(p.line_counts(g)[7].self == 1);
}

TEST_CASE("annotated source shows each line of the function with its share") {
  Profile p;
  FunctionId f = p.add_function({"fib", "fib.lua", 2, 4, FunctionKind::Script});
  const int l3[] = {3}, l4[] = {4};
  for (int i = 0; i < 3; ++i) p.add_sample(0, 0, 1, &f, 1, l3);
  p.add_sample(0, 0, 1, &f, 1, l4);
  std::vector<std::string> src = {"-- header", "local function fib(n)", "  if n < 2 then return n end",
                                  "  return fib(n-1) + fib(n-2)", "end"};
  std::string out = annotated_source(p, f, src);
  CHECK(out == "fib (fib.lua:2): 100.00% of the samples in the function, 100.00% on its own lines\n"
               " self %  total %   line  source\n"
               "                      2  local function fib(n)\n"
               "  75.00    75.00      3    if n < 2 then return n end\n"
               "  25.00    25.00      4    return fib(n-1) + fib(n-2)\n");
  // Without the text, only the sampled lines.
  CHECK(annotated_source(p, f, {}).find("      3  \n") != std::string::npos);
}

TEST_CASE("allocation countdown - weights add up to the bytes and follow the sizes") {
  AllocationCountdown none(0);
  CHECK(none.allocate(1 << 20) == 0);

  // 64-byte and 4096-byte allocations interleaved 1:1; the big ones hold 64/65 of the bytes.
  AllocationCountdown c(8192, 42);
  std::uint64_t total = 0, weight_small = 0, weight_big = 0, samples = 0;
  for (int i = 0; i < 200000; ++i) {
    std::uint64_t size = i % 2 ? 4096 : 64;
    total += size;
    std::uint64_t w = c.allocate(size);
    if (w) ++samples;
    (size == 64 ? weight_small : weight_big) += w;
  }
  CHECK(weight_small + weight_big + c.unsampled_bytes() == total);  // nothing lost, nothing made up
  double share_big = static_cast<double>(weight_big) / static_cast<double>(weight_small + weight_big);
  CHECK(share_big == Approx(4096.0 / 4160.0).margin(0.01));
  // An allocation is sampled when it holds at least one point: 1 - exp(-size/mean) of them.
  double expected = 100000 * (1 - std::exp(-64.0 / 8192)) + 100000 * (1 - std::exp(-4096.0 / 8192));
  CHECK(static_cast<double>(samples) == Approx(expected).epsilon(0.03));

  // One huge allocation is one sample, in O(1), carrying (nearly) all of its bytes.
  AllocationCountdown huge(64, 7);
  std::uint64_t w = huge.allocate(std::uint64_t{1} << 40);
  CHECK(w + huge.unsampled_bytes() == std::uint64_t{1} << 40);
  CHECK(huge.unsampled_bytes() < 64 * 50);
}

TEST_CASE("allocation countdown - a fixed-period loop cannot alias with the sample points") {
  // Allocations of 100 bytes at positions 0..9 of a loop, one of them 10x bigger; with a fixed
  // interval equal to the loop's 1900 bytes one position would take every sample.
  AllocationCountdown c(1900, 3);
  std::uint64_t by_position[10] = {};
  for (int i = 0; i < 500000; ++i) {
    int pos = i % 10;
    by_position[pos] += c.allocate(pos == 3 ? 1000 : 100);
  }
  std::uint64_t sum = 0;
  for (auto w : by_position) sum += w;
  double big = static_cast<double>(by_position[3]) / static_cast<double>(sum);
  CHECK(big == Approx(1000.0 / 1900.0).margin(0.02));
  for (int pos = 0; pos < 10; ++pos)
    if (pos != 3) CHECK(static_cast<double>(by_position[pos]) / static_cast<double>(sum) == Approx(100.0 / 1900.0).margin(0.01));
}

// A space profile's speedscope weights are the bytes themselves (unit "bytes"), and they come
// back as the same samples; the time line was once applied to them (111.57 "bytes" written
// for 11,946,097 allocated).
TEST_CASE("speedscope of a space profile weighs bytes and reads back the same bytes") {
  Profile p = seed_space_profile();
  p.period_ns = 8192;  // the mean bytes between samples
  p.total_seconds = 0.25;  // the run's time: no business in a byte weight
  nlohmann::json file = nlohmann::json::parse(write_speedscope(p));
  const nlohmann::json& prof = file["profiles"][0];
  CHECK(prof["unit"] == "bytes");
  std::uint64_t sum = 0;
  for (const auto& w : prof["weights"]) {
    REQUIRE(w.is_number_integer());
    sum += w.get<std::uint64_t>();
  }
  CHECK(sum == 11 * 8 * 1024);
  CHECK(prof["endValue"] == 11 * 8 * 1024);
  Profile back;
  std::string error;
  std::vector<std::string> warnings;
  REQUIRE(read_speedscope(write_speedscope(p), &back, &error, &warnings));
  CHECK(warnings.empty());
  CHECK(back.clock == ClockKind::Alloc);
  CHECK(back.sample_weight() == p.sample_weight());
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    CAPTURE(p.functions.label(f));
    FunctionId g = test::function_named(back, p.functions.label(f));  // speedscope names are labels
    REQUIRE(g != kNoFunction);
    CHECK(back.counts(g).self == p.counts(f).self);
    CHECK(back.counts(g).cumulative == p.counts(f).cumulative);
  }
}

// Time weights are whole nanoseconds written as milliseconds: at most six decimals, never the
// float noise of seconds-per-sample times a count (2.0206910697674423), and they add up to
// the end value exactly.
TEST_CASE("speedscope time weights are whole nanoseconds") {
  Profile p;
  FunctionId a = p.add_function({"a", "x.lua", 1, 2, FunctionKind::Named});
  FunctionId b = p.add_function({"b", "x.lua", 3, 4, FunctionKind::Named});
  const FunctionId ab[] = {a, b};
  for (int i = 0; i < 43; ++i) p.add_sample(0, 0, 1 + i % 3, i % 2 ? ab : ab + 1, i % 2 ? 2 : 1);
  p.period_ns = 1000000;
  p.total_seconds = 0.086889716;  // 86 samples of a measured 1.0103455348837211 ms
  nlohmann::json prof = nlohmann::json::parse(write_speedscope(p))["profiles"][0];
  std::int64_t sum_ns = 0;
  for (const auto& w : prof["weights"]) {
    std::string text = w.dump();
    CAPTURE(text);
    std::size_t dot = text.find('.');
    CHECK((dot == std::string::npos || text.size() - dot - 1 <= 6));
    sum_ns += std::llround(w.get<double>() * 1e6);
  }
  CHECK(sum_ns == std::llround(prof["endValue"].get<double>() * 1e6));
  CHECK(std::abs(static_cast<double>(sum_ns) - 0.086889716e9) < 100);
}
