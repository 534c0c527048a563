#include <catch2/catch.hpp>

#include <zlib.h>

#include <nlohmann/json.hpp>

#include "example_profile.hpp"
#include "profile_equivalence.hpp"
#include "scriptprof/folded_stacks.hpp"
#include "scriptprof/frame_report.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/lispworks_tree.hpp"
#include "scriptprof/interval_formats.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/timeline.hpp"
#include "function_lookup.hpp"
#include "vector_file.hpp"

using namespace scriptprof;
using nlohmann::json;

namespace {

std::string gunzip(const std::string& gz) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(inflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

test::Example named_example() {
  auto e = test::worked_example("demo.lua", 9, 1, 5, FunctionKind::Named);
  e.profile.name = "demo.lua";
  e.profile.add_thread(0, "main");
  return e;
}

}  // namespace

TEST_CASE("timeline of the worked example (FORMATS 11.1)") {
  auto e = test::worked_example("");
  std::string text;
  for (const TimelineEvent& ev : thread_timeline(e.profile, 0))
    text += std::string(ev.open ? "O " : "C ") + e.profile.functions.label(ev.function) + " " +
            std::to_string(ev.t_ns / 1'000'000) + "\n";
  CHECK(text == test::formats_file("vectors/out_events.txt"));
}

TEST_CASE("speedscope of the worked example matches the vector (FORMATS 8.4)") {
  auto e = named_example();
  SpeedscopeOptions unmerged;
  unmerged.merge_runs = false;
  json ours = json::parse(write_speedscope(e.profile, unmerged));
  json want = json::parse(test::formats_file("vectors/out_speedscope_sampled.txt"));
  ours.erase("exporter");
  want.erase("exporter");
  ours.erase("scriptprof");  // our time line (checked by the round trips)
  CHECK(ours == want);
  json merged = json::parse(write_speedscope(e.profile));
  CHECK(merged["profiles"][0]["samples"] == json::parse("[[0,1],[0,1,1],[0,1],[0,2]]"));
  CHECK(merged["profiles"][0]["weights"] == json::parse("[100,400,200,300]"));
}

TEST_CASE("speedscope files read back - sampled and evented") {
  auto e = named_example();
  Profile back;
  std::string error;
  REQUIRE(read_speedscope(write_speedscope(e.profile), &back, &error));
  CHECK(test::difference(e.profile, back, false) == "");
  // The evented vector is the same profile as intervals.
  json evented = json::parse(test::formats_file("vectors/out_speedscope_evented.txt"));
  Profile from_events;
  REQUIRE(read_speedscope(evented.dump(), &from_events, &error));
  CHECK(test::difference(e.profile, from_events, false) == "");
  CHECK_FALSE(read_speedscope("{\"$schema\":\"x\"}", &back, &error));
  CHECK(error.rfind("not a speedscope file", 0) == 0);
  CHECK_FALSE(read_speedscope("{nope", &back, &error));
  CHECK(error == "not valid JSON");
  CHECK_FALSE(read_speedscope(R"({"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]}})",
                              &back, &error));
  CHECK(error == "malformed speedscope file: the file has no \"profiles\"");
  CHECK_FALSE(read_speedscope(R"({"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]},
      "profiles":[{"type":"sampled","samples":[[0]],"weights":[1]}]})", &back, &error));
  CHECK(error == "profiles[0].samples[0]: frame index out of range");
  evented["profiles"][0]["events"][2]["type"] = "C";
  CHECK_FALSE(read_speedscope(evented.dump(), &back, &error));
  CHECK(error == "profiles[0].events[3]: closes a frame that is not on top");  // [2] closed a; [3] is not on top
}

TEST_CASE("A JIT's compiled share: per function in speedscope (read back), per path in pprof labels") {
  Profile p;
  p.period_ns = 1'000'000;
  FunctionId outer = p.add_function({"outer", "a.lua", 1, 9, FunctionKind::Script});
  FunctionId hot = p.add_function({"hot", "a.lua", 2, 4, FunctionKind::Script});
  FunctionId gc = p.add_function({"(gc)", "", 0, 0, FunctionKind::Pseudo});
  const FunctionId via_outer[] = {outer, hot}, alone[] = {hot}, collecting[] = {outer, gc};
  for (int i = 0; i < 10; ++i) p.add_jit_share(p.add_sample(0, 0, 1, via_outer, 2), 1, i < 7);  // 7 of 10
  for (int i = 0; i < 4; ++i) p.add_jit_share(p.add_sample(0, 0, 1, alone, 1), 1, i == 0);      // 1 of 4
  p.add_jit_share(p.add_sample(0, 0, 3, collecting, 2), 3, false);
  p.total_seconds = 0.017;
  CHECK(p.counts(hot).compiled == 8);
  CHECK(p.compiled_at(p.tree, p.tree.child(p.tree.child(p.tree.root(0), outer), hot)) == 7u);
  CHECK(p.compiled_at(p.tree, p.tree.child(p.tree.root(0), hot)) == 1u);

  json ss = json::parse(write_speedscope(p));
  CHECK(ss["shared"]["frames"][hot]["compiled"].get<double>() == Approx(8.0 / 14.0));
  CHECK_FALSE(ss["shared"]["frames"][outer].contains("compiled"));  // no self time
  CHECK_FALSE(ss["shared"]["frames"][gc].contains("compiled"));     // not code that compiles
  Profile back;
  std::string error;
  REQUIRE(read_speedscope(ss.dump(), &back, &error));
  CHECK(back.jit_shares);
  REQUIRE(test::function_named(back, "hot (a.lua:2)") != kNoFunction);
  CHECK(back.counts(test::function_named(back, "hot (a.lua:2)")).compiled == 8);
  CHECK_FALSE(back.compiled_at(back.tree, back.tree.root(0)));  // a file keeps no per-path share
  ss["shared"]["frames"][hot]["compiled"] = 1.5;
  CHECK_FALSE(read_speedscope(ss.dump(), &back, &error));
  CHECK(error == "shared.frames[1].compiled must be a number in [0, 1]");

  // pprof: hot's two paths split into labeled samples; (gc) carries no label.
  const std::string raw = write_pprof(p, false);
  for (const char* s : {"jit", "compiled", "interpreted"}) CHECK(raw.find(s) != std::string::npos);
  Profile plain;
  plain.period_ns = 1'000'000;
  const FunctionId f = plain.add_function({"f", "a.lua", 1, 2, FunctionKind::Script});
  plain.add_sample(0, 0, 1, &f, 1);
  CHECK(write_pprof(plain, false).find("interpreted") == std::string::npos);  // no JIT: no label
}

TEST_CASE("Chrome trace of the worked example matches the vector (FORMATS 10.3)") {
  auto e = test::worked_example("");
  e.profile.name = "lua demo.lua";
  e.profile.add_thread(0, "main coroutine");
  std::string text, error;
  REQUIRE(write_chrome_trace(e.profile, &text, &error));
  CHECK(json::parse(text) == json::parse(test::formats_file("vectors/out_chrome.txt")));
  Profile no_stacks;
  CHECK_FALSE(write_chrome_trace(no_stacks, &text, &error));
  CHECK(error.find("full stacks") != std::string::npos);
}

TEST_CASE("pprof of the worked example is byte for byte the vector (FORMATS 9.4)") {
  auto e = named_example();
  e.profile.start_unix_ns = 1700000000000000000ull;
  std::string raw = write_pprof(e.profile, false);
  CHECK(raw == test::formats_file("vectors/demo.pb"));
  std::string gz = write_pprof(e.profile);
  CHECK(gz.substr(0, 3) == "\x1f\x8b\x08");
  CHECK(gunzip(gz) == raw);
}

TEST_CASE("JSON writers keep hostile names valid") {
  Profile p;
  p.keep_samples = true;
  FunctionId f = p.add_function({"<script>\"\\\x01\xff\xfe", "", 0, 0, FunctionKind::Named});
  p.add_sample(0, 0, 1, &f, 1);
  json s = json::parse(write_speedscope(p));
  CHECK(s["shared"]["frames"][0]["name"] == "<script>\"\\\x01\xEF\xBF\xBD\xEF\xBF\xBD");
  std::string text, error;
  REQUIRE(write_chrome_trace(p, &text, &error));
  CHECK(json::parse(text)["traceEvents"][2]["name"] == "<script>\"\\\x01\xEF\xBF\xBD\xEF\xBF\xBD");
}

namespace {

// The viewer's tree rebuilt from its flat list ([parent, function, samples, base?] in depth-first
// order, labels of the function-less nodes by index) as nested {n, v, c} (and "b" when given),
// each function index turned back into its label.
json named_tree(const json& data) {
  const json& list = data["nodes"];
  std::vector<json> nodes;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& a = list[i];
    json node = {{"n", a[1] == -1 ? data["labels"][std::to_string(i)] : data["functions"][a[1].get<std::size_t>()]},
                 {"v", a[2]},
                 {"c", json::array()}};
    if (a.size() > 3) node["b"] = a[3];
    nodes.push_back(node);
  }
  // Children follow their parent in depth-first order: attach from the last node back.
  std::vector<std::vector<std::size_t>> kids(nodes.size());
  for (std::size_t i = 1; i < nodes.size(); ++i) kids[list[i][0].get<std::size_t>()].push_back(i);
  for (std::size_t i = nodes.size(); i-- > 0;)
    for (std::size_t k : kids[i]) nodes[i]["c"].push_back(nodes[k]);
  return nodes.empty() ? json() : nodes[0];
}

json html_data(const std::string& page) {
  std::size_t a = page.find("<script type=\"application/json\" id=\"data\">");
  REQUIRE(a != std::string::npos);
  a = page.find('>', a) + 1;
  return json::parse(page.substr(a, page.find("</script>", a) - a));
}

}  // namespace

TEST_CASE("the HTML flame graph carries the tree as data that cannot break out of its script") {
  Profile p;
  FunctionId evil = p.add_function({"</script><script>alert(1)</script>", "", 0, 0, FunctionKind::Named});
  FunctionId outer = p.add_function({"outer", "", 0, 0, FunctionKind::Named});
  const FunctionId stack[] = {outer, evil};
  p.add_sample(0, 0, 3, stack, 2);
  p.add_sample(0, 0, 1, &outer, 1);
  std::string page = write_html_flame_graph(p);
  CHECK(page.find("</script><script>alert") == std::string::npos);
  json data = html_data(page);
  json tree = named_tree(data);
  CHECK(tree["v"] == 4);
  CHECK(tree["c"][0]["n"] == "outer");
  CHECK(tree["c"][0]["c"][0]["n"] == "</script><script>alert(1)</script>");
  CHECK(tree["c"][0]["c"][0]["v"] == 3);
  CHECK(page.find("http://") == std::string::npos);  // nothing is fetched
  CHECK(page.find("https://") == std::string::npos);
}

TEST_CASE("lms CSV of the worked example matches the vector and reads back (FORMATS 6.3)") {
  auto e = test::worked_example("");
  std::string text, error;
  REQUIRE(write_lms_csv(e.profile, &text, &error));
  CHECK(text == test::formats_file("vectors/out_lms.txt"));
  Profile back;
  REQUIRE(read_lms_csv(text, &back, &error));
  // Weights are microseconds now: shares and the tree are the same, and so is the file.
  CHECK(back.sample_weight() == 1'000'000);
  CHECK(back.counts(1).self == 700'000);  // a
  std::string again;
  REQUIRE(write_lms_csv(back, &again, &error));
  CHECK(again == text);
}

TEST_CASE("lms CSV: the seed's example and malformed input") {
  Profile p;
  std::string error;
  REQUIRE(read_lms_csv("2,0,reader\n0,0,10\n1,0,990\n2,1,writer\n0,1,0\n1,1,200\n0,0,10\n1,0,700\n", &p, &error));
  CHECK(p.sample_weight() == 990 + 200 + 700);
  CHECK(p.counts(0).self == 1690);  // reader [10,1000) and [1210,1910)
  CHECK(p.counts(1).self == 200);   // writer [1000,1200)
  CHECK_FALSE(read_lms_csv("0,0,10\n", &p, &error));
  CHECK(error == "line 1: id 0 is used before its mapping line");
  CHECK_FALSE(read_lms_csv("2,0,a\n0,0,1\n1,1,2\n", &p, &error));
  CHECK(error == "line 3: id 1 is used before its mapping line");
  CHECK_FALSE(read_lms_csv("2,0,a\n2,1,b\n0,0,1\n0,1,1\n1,0,1\n", &p, &error));
  CHECK(error == "line 5: end of id 0 while id 1 is innermost");
  CHECK_FALSE(read_lms_csv("2,0,a\n0,0,-1\n", &p, &error));
  CHECK(error == "line 2: the time difference must be a non-negative integer, got '-1'");
  CHECK_FALSE(read_lms_csv("2,0,a\n0,0,1\n", &p, &error));
  CHECK(error == "line 2: 1 interval(s) never end");
  CHECK_FALSE(read_lms_csv("7,0,1\n", &p, &error));
  CHECK(error == "line 1: the type must be 0, 1 or 2, got '7'");
}

TEST_CASE("Sampler file of the worked example is byte for byte the vector (FORMATS 5.3)") {
  auto e = test::worked_example("demo.lua", 9, 1, 5, FunctionKind::Named);
  std::string bytes, error;
  SamplerWriteOptions bare;
  bare.time_scale = false;  // the format as FORMATS 5 has it
  REQUIRE(write_sampler(e.profile, &bytes, &error, bare));
  CHECK(bytes == test::formats_file("vectors/demo.sampler"));
  CHECK(bytes.size() == 481);
  Profile back;
  REQUIRE(read_sampler(bytes, &back, &error));
  CHECK(test::difference(e.profile, back, false, false) == "");
}

TEST_CASE("Sampler ids never contain TAB or LF bytes and weights become repeated lines") {
  Profile p;
  std::vector<FunctionId> fns;
  for (int i = 0; i < 300; ++i) fns.push_back(p.add_function({"f" + std::to_string(i), "x.lua", i, i, FunctionKind::Named}));
  for (FunctionId f : fns) p.add_sample(0, 0, f % 3 + 1, &f, 1);
  Profile back;
  std::string bytes, error;
  p.total_seconds = 0.75;
  REQUIRE(write_sampler(p, &bytes, &error));
  std::vector<std::string> warnings;
  REQUIRE(read_sampler(bytes, &back, &error, &warnings));
  CHECK(back.sample_weight() == p.sample_weight());
  CHECK(warnings.empty());
  CHECK(back.total_seconds == p.total_seconds);  // the time a line stands for came back
  CHECK(back.functions.size() == p.functions.size());  // the time symbol is not a function
  CHECK(test::difference(p, back, false, false) == "");
  CHECK_FALSE(read_sampler("@supersamplerV1.0\n@symboltableV1.1\n@end\n@threadV1.0\t0001\n\t\x00\x00", &back, &error));
  CHECK(error.find("truncated sample") != std::string::npos);
  CHECK_FALSE(read_sampler("nope", &back, &error));
  CHECK(error == "byte 0: not a Sampler file (expected \"@supersamplerV1.0\" and \"@symboltableV1.1\")");
  // Found by fuzz_lispworks: a huge count must not become billions of lines.
  Profile huge;
  FunctionId f = huge.add_function({"f", "", 0, 0, FunctionKind::Named});
  huge.add_sample(0, 0, 5555555555555555555ull, &f, 1);
  CHECK_FALSE(write_sampler(huge, &bytes, &error));
  CHECK(error == "a Sampler file holds one line per tick: 5555555555555555555 ticks exceed the limit of 20000000 lines");
}

TEST_CASE("fuzzer regression - readers refuse sums that would wrap around") {
  Profile p;
  std::string error;
  // Found by fuzz_lms: a time difference near 2^64 microseconds.
  CHECK_FALSE(read_lms_csv("2,0,a\n0,0,0\n1,0,15907416563667318997\n", &p, &error));
  CHECK(error == "line 3: the time passes 2^62 ns");
  // 2^62 itself is the most a profile holds: the second line goes past it.
  CHECK_FALSE(read_profile_text("a 4611686018427387904\nb 4611686018427387904\n", "folded", &p, &error));
  CHECK(error == "line 2: counts add up to more than 2^62");
  CHECK_FALSE(read_profile_text("a 18446744073709551616\n", "folded", &p, &error));  // past 2^64
  CHECK(error == "line 1: counts add up to more than 2^62");
  CHECK_FALSE(read_profile_text("LispWorks Profiler Tree: t\n0|1|0|1|0|\"t\"\n1|3000000000000000000|0|0|0|a\n"
                                "1|3000000000000000000|0|0|0|b\n", "lispworks", &p, &error));
  CHECK(error == "line 4: counts add up to more than 2^62");
}

TEST_CASE("speedscope weights come back as samples when no time per sample was measured") {
  // Found by fuzz_roundtrip: a tree that says total_seconds=0 was written a period a sample
  // and read back a weight a sample.
  for (double total : {0.0, 1e-15, 0.25}) {
    Profile p;
    FunctionId f = p.add_function({"f", "x.lua", 1, 1, FunctionKind::Named});
    FunctionId g = p.add_function({"g", "x.lua", 2, 2, FunctionKind::Named});
    p.add_sample(0, 0, 5, &f, 1);
    p.add_sample(0, 0, 5, &g, 1);  // equal weights: their divisor is no period
    p.period_ns = 2001;
    p.total_seconds = total;
    Profile back;
    std::string error;
    REQUIRE(read_speedscope(write_speedscope(p), &back, &error));
    INFO("total_seconds " << total);
    CHECK(back.sample_weight() == 10);
    CHECK(test::difference(p, back, false, false) == "");
  }
}

TEST_CASE("speedscope evented output of the worked example matches the vector (FORMATS 8.4)") {
  auto e = named_example();
  std::string text, error;
  REQUIRE(write_speedscope_evented(e.profile, &text, &error));
  json ours = json::parse(text), want = json::parse(test::formats_file("vectors/out_speedscope_evented.txt"));
  CHECK(ours["profiles"] == want["profiles"]);
  CHECK(ours["shared"] == want["shared"]);
  Profile back;
  REQUIRE(read_speedscope(text, &back, &error));
  CHECK(test::difference(e.profile, back, false) == "");
}

TEST_CASE("HTML flame graph of the worked example carries its call tree") {
  auto e = test::worked_example("");
  e.profile.name = "demo.lua";
  json data = html_data(write_html_flame_graph(e.profile));
  CHECK(data["title"] == "demo.lua - 1.0 s, 10 samples");
  const json want = json::parse(
      "{\"n\":\"all (10 samples)\",\"v\":10,\"c\":[{\"n\":\"main\",\"v\":10,\"c\":["
      "{\"n\":\"a\",\"v\":7,\"c\":[{\"n\":\"a\",\"v\":4,\"c\":[]}]},{\"n\":\"b\",\"v\":3,\"c\":[]}]}]}");
  CHECK(named_tree(data) == want);
  CHECK(data["seconds_per_sample"] == Approx(0.1));
}

TEST_CASE("A differential HTML flame graph carries the base run's weight of each stack") {
  auto base = test::worked_example("");  // main: a (7, of which a again 4), b (3)
  Profile now;
  FunctionId main = now.add_function({"main", "", 0, 0, FunctionKind::Named});
  FunctionId b = now.add_function({"b", "", 0, 0, FunctionKind::Named});
  FunctionId c = now.add_function({"c", "", 0, 0, FunctionKind::Named});
  const FunctionId mb[] = {main, b}, mc[] = {main, c};
  now.add_sample(0, 0, 6, mb, 2);  // b grew from 3 to 6
  now.add_sample(0, 1, 2, mc, 2);  // c is new
  json data = html_data(write_html_flame_graph(now, &base.profile));
  CHECK(data["base_samples"] == 10);
  const json tree = named_tree(data);
  CHECK(tree["b"] == 10);
  const json& m = tree["c"][0];
  CHECK(m["b"] == 10);
  for (const json& child : m["c"]) {
    if (child["n"] == "b") CHECK(child["b"] == 3);
    if (child["n"] == "c") CHECK(child["b"] == 0);  // no such stack in the base run
  }
  CHECK(data["title"].get<std::string>().find("against") != std::string::npos);
}

// Without full stacks the samples are the call tree's stacks, one each: speedscope's time-order
// view would show an order that never happened, so the file and profile names say so; with full
// stacks the order is the real one and nothing is added. Read back, the name is the profile's.
TEST_CASE("speedscope from aggregated stacks says it has no time order") {
  auto e = named_example();
  e.profile.keep_samples = false;
  const json aggregated = json::parse(write_speedscope(e.profile));
  CHECK(aggregated["name"].get<std::string>() == e.profile.name + " (aggregated stacks: no time order)");
  CHECK(aggregated["profiles"][0]["name"].get<std::string>().find("(aggregated stacks: no time order)") != std::string::npos);
  Profile back;
  std::string error;
  REQUIRE(read_speedscope(aggregated.dump(), &back, &error));
  CHECK(back.name == e.profile.name);
  CHECK(json::parse(write_speedscope(back))["name"] == aggregated["name"]);  // not said twice
  e.profile.keep_samples = true;
  REQUIRE(e.profile.samples.size() > 0);
  CHECK(json::parse(write_speedscope(e.profile))["name"].get<std::string>() == e.profile.name);
}

TEST_CASE("A thread is numbered and named the same in every report and file") {
  Profile p;
  p.keep_samples = true;
  p.period_ns = 1'000'000;
  p.add_thread(0, "main");
  p.add_thread(3, "worker");
  const FunctionId f = p.add_function({"f", "a.lua", 1, 2, FunctionKind::Script});
  const FunctionId g = p.add_function({"g", "a.lua", 4, 5, FunctionKind::Script});
  for (std::uint64_t t = 0; t < 4; ++t) {
    p.add_sample(0, t * 1'000'000, 1, &f, 1);
    p.add_sample(3, t * 1'000'000, 1, &g, 1);
  }
  p.frame_marks = {{3, 0}, {3, 2'000'000}, {3, 4'000'000}};
  std::string text, error;
  REQUIRE(write_chrome_trace(p, &text, &error));
  const std::string worker = "thread 3: worker";
  CHECK(text.find(json(worker).dump()) != std::string::npos);
  CHECK(write_speedscope(p).find(worker) != std::string::npos);
  CHECK(write_pprof(p, false).find(worker) != std::string::npos);
  CHECK(write_lispworks_tree(p).find(worker) != std::string::npos);
  CHECK(frame_report(p).find("Frames of " + worker + ": ") != std::string::npos);
  FoldedWriteOptions rooted;
  rooted.thread_root = true;
  CHECK(write_folded(p, rooted).find(worker + ";g (a.lua:4) 4") != std::string::npos);
  // speedscope gives the number and the name back.
  Profile back;
  REQUIRE(read_speedscope(write_speedscope(p), &back, &error));
  CHECK(thread_name(back, 3) == "worker");
  CHECK(thread_name(back, 0) == "main");
  std::uint32_t n = 0;
  std::string name;
  CHECK_FALSE(parse_thread_label("thread x: y", &n, &name));
  CHECK_FALSE(parse_thread_label("thread 99999999999", &n, &name));
  CHECK(parse_thread_label("thread 7", &n, &name));
  CHECK((n == 7 && name.empty()));
}
