#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "scriptprof/sample_log.hpp"

using namespace scriptprof;

static bool same(const SampleRecord& a, const SampleRecord& b) {
  return a.leaf == b.leaf && a.thread == b.thread && a.weight == b.weight && a.t_ns == b.t_ns;
}

TEST_CASE("the sample log gives back every record, in order and by index") {
  // Times mostly a period apart with jitter, now and then a long gap or a step back (samples
  // merged from threads), weights mostly 1, threads switching in runs, one huge weight.
  std::mt19937_64 rng(5);
  std::vector<SampleRecord> want;
  SampleLog log;
  std::uint64_t t = 0;
  std::uint32_t thread = 0;
  for (int i = 0; i < 5000; ++i) {
    const auto u = rng() % 100;
    if (u == 0) t += 5'000'000'000ull;                       // a long suspension
    else if (u == 1) t -= std::min<std::uint64_t>(t, 3'000'000);  // back in time
    else t += 1'000'000 + rng() % 200'000;
    if (rng() % 40 == 0) thread = static_cast<std::uint32_t>(rng() % 3);
    const std::uint64_t weight = i == 777 ? (std::uint64_t{1} << 40) : (rng() % 10 == 0 ? 2 + rng() % 5 : 1);
    SampleRecord r{static_cast<NodeId>(rng() % 100000), thread, weight, t};
    want.push_back(r);
    log.push_back(r);
  }
  REQUIRE(log.size() == want.size());
  std::size_t i = 0;
  for (const SampleRecord& r : log) {
    REQUIRE(i < want.size());
    CHECK(same(r, want[i]));
    ++i;
  }
  CHECK(i == want.size());
  for (std::size_t k : {std::size_t{0}, std::size_t{63}, std::size_t{64}, std::size_t{777}, std::size_t{4999}})
    CHECK(same(log[k], want[k]));
  // A 1 kHz run's samples: a leaf and about 3 bytes of time each.
  SampleLog steady;
  for (std::uint64_t k = 0; k < 100000; ++k) steady.push_back({static_cast<NodeId>(k % 5000), 0, 1, k * 1'000'000 + k % 7});
  CHECK(static_cast<double>(steady.bytes()) / 100000.0 <= 8.0);
  log.clear();
  CHECK(log.empty());
  CHECK(log.begin() == log.end());
}
