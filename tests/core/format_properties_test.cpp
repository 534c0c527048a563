// Properties every format must keep on random profiles with hostile names: readable formats
// round-trip, and JSON output satisfies the documented schemas (FORMATS.md 8.1-8.2, 10.1).
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "profile_equivalence.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/profile_io.hpp"

using namespace scriptprof;
using nlohmann::json;

namespace {

// Names with the characters formats have to escape (but none of the documented lossy ones:
// LF/CR/TAB, ';' in folded stacks, a trailing " digits").
Profile random_profile(std::mt19937& rng, int threads) {
  static const std::vector<std::string> pieces = {"a", "<script>", "\"", "\\", "|", "&amp", ",", "é", "✓", " ",
                                                  "(", ")", "'", "{", "}", "[C]", "@end", "\x01", "x.lua:12"};
  Profile p;
  p.keep_samples = true;
  p.period_ns = 1'000'000;
  std::vector<FunctionId> fns;
  for (int i = 0; i < 30; ++i) {
    std::string name;
    for (std::size_t k = rng() % 5; k > 0; --k) name += pieces[rng() % pieces.size()];
    name += "#" + std::to_string(i);
    fns.push_back(p.add_function({name, i % 3 ? "f.lua" : "", i, i, FunctionKind::Named}));
  }
  std::uint64_t t = 0;
  for (int s = 0; s < 600; ++s) {
    std::vector<FunctionId> stack(1 + rng() % 12);
    for (auto& f : stack) f = fns[rng() % (rng() % 4 ? 8 : fns.size())];
    std::uint64_t w = 1 + rng() % 3;
    p.add_sample(static_cast<std::uint32_t>(rng() % static_cast<unsigned>(threads)), t, w, stack.data(), stack.size());
    t += w * p.period_ns;
  }
  for (int i = 0; i < threads; ++i) p.add_thread(static_cast<std::uint32_t>(i), "t" + std::to_string(i));
  p.total_seconds = static_cast<double>(p.sample_weight()) * 1e-3;
  return p;
}

// Shares of self and cumulative weight per label: what survives any unit change.
std::map<std::string, std::pair<double, double>> shares(const Profile& p) {
  std::map<std::string, std::pair<double, double>> out;
  double n = static_cast<double>(p.sample_weight());
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.counts(f).cumulative)
      out[p.functions.label(f)] = {static_cast<double>(p.counts(f).self) / n,
                                   static_cast<double>(p.counts(f).cumulative) / n};
  return out;
}

void check_speedscope_schema(const json& f) {
  REQUIRE(f.is_object());
  CHECK(f.at("$schema") == "https://www.speedscope.app/file-format-schema.json");
  CHECK(f.at("version").is_string());
  const json& frames = f.at("shared").at("frames");
  REQUIRE(frames.is_array());
  for (const json& fr : frames) {
    CHECK(fr.at("name").is_string());
    if (fr.contains("file")) CHECK(fr["file"].is_string());
    if (fr.contains("line")) CHECK(fr["line"].is_number());
  }
  static const std::set<std::string> units = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"};
  for (const json& pr : f.at("profiles")) {
    CHECK(pr.at("name").is_string());
    CHECK(units.count(pr.at("unit").get<std::string>()) == 1);
    CHECK(pr.at("endValue").get<double>() >= pr.at("startValue").get<double>());
    REQUIRE(pr.at("type") == "sampled");
    REQUIRE(pr.at("samples").size() == pr.at("weights").size());
    for (const json& w : pr["weights"]) CHECK(w.get<double>() >= 0);
    for (const json& s : pr["samples"])
      for (const json& i : s) CHECK(i.get<std::size_t>() < frames.size());
  }
}

void check_chrome_schema(const json& f) {
  const json& events = f.at("traceEvents");
  REQUIRE(events.is_array());
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::string>> open;
  std::map<std::pair<std::int64_t, std::int64_t>, double> last_ts;
  for (const json& e : events) {
    CHECK(e.at("name").is_string());
    std::string ph = e.at("ph");
    auto key = std::make_pair(e.at("pid").get<std::int64_t>(), e.at("tid").get<std::int64_t>());
    if (ph == "M") {
      CHECK(e.at("args").at("name").is_string());
      continue;
    }
    REQUIRE((ph == "B" || ph == "E"));
    double ts = e.at("ts").get<double>();
    CHECK(ts >= last_ts[key]);  // non-decreasing per thread
    last_ts[key] = ts;
    if (ph == "B") {
      open[key].push_back(e["name"]);
    } else {
      REQUIRE_FALSE(open[key].empty());  // an E always closes an open B
      CHECK(open[key].back() == e["name"].get<std::string>());
      open[key].pop_back();
    }
  }
  for (const auto& [k, stack] : open) CHECK(stack.empty());  // every B is closed
}

}  // namespace

TEST_CASE("every readable format round-trips random profiles with hostile names") {
  std::mt19937 rng(99);
  for (int round = 0; round < 8; ++round) {
    Profile p = random_profile(rng, 1 + round % 3);
    for (const std::string& format : readable_formats()) {
      INFO("round " << round << ", format " << format);
      std::string text, error;
      REQUIRE(render_format(p, format, &text, &error));
      Profile back;
      REQUIRE(read_profile_text(text, format, &back, &error));
      if (format == "lms") {  // one thread per file, weights in microseconds: tested below
        CHECK(back.sample_weight() > 0);
        continue;
      }
      bool threads = format != "folded";
      CHECK(test::difference(p, back, threads, false) == "");
      CHECK(shares(back) == shares(p));
    }
  }
}

TEST_CASE("lms keeps the first thread's shares exactly") {
  std::mt19937 rng(5);
  Profile p = random_profile(rng, 1);
  std::string text, error;
  REQUIRE(render_format(p, "lms", &text, &error));
  Profile back;
  REQUIRE(read_profile_text(text, "lms", &back, &error));
  CHECK(back.sample_weight() == p.sample_weight() * 1000);  // 1 ms periods, read as microseconds
  CHECK(test::paths(back, false).size() == test::paths(p, false).size());
  auto a = shares(p), b = shares(back);
  REQUIRE(a.size() == b.size());
  for (const auto& [label, s] : a) {
    CHECK(b[label].first == Approx(s.first));
    CHECK(b[label].second == Approx(s.second));
  }
}

TEST_CASE("speedscope and Chrome output satisfy their schemas on random profiles") {
  std::mt19937 rng(7);
  for (int round = 0; round < 10; ++round) {
    Profile p = random_profile(rng, 1 + round % 3);
    check_speedscope_schema(json::parse(write_speedscope(p)));
    std::string text, error;
    REQUIRE(write_chrome_trace(p, &text, &error));
    check_chrome_schema(json::parse(text));
  }
}
