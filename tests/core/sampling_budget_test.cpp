#include <catch2/catch.hpp>

#include "scriptprof/sampling_budget.hpp"

using namespace scriptprof;

TEST_CASE("sampling budget: one-off costs within the allowance defer nothing") {
  SamplingBudget b;
  b.start();
  // A run's first sample is slow (page faults, first allocations); the next ones are cheap.
  CHECK(b.spend(100'000, 900'000) == 100'000);
  CHECK(b.spend(200'000, 5'000) == 200'000);
  CHECK(b.spend(300'000, 5'000) == 300'000);
}

TEST_CASE("sampling budget: samples that always cost more hold the profiler to 1/divisor") {
  SamplingBudget b;
  b.start();
  std::uint64_t at = 0, spent = 0;
  const std::uint64_t cost = 10'000'000;  // a stack 100k frames deep: 10 ms a walk
  for (int i = 0; i < 1000; ++i) {
    std::uint64_t next = b.spend(at, cost);
    CHECK(next >= at);
    spent += cost;
    at = next + 1;  // the next tick after the wait
  }
  // Over the run: profiler time <= program time / divisor + the allowance.
  CHECK(spent <= at / b.divisor + b.allowance_ns);
  CHECK(spent >= at / b.divisor);  // and it still samples as often as the budget allows
}

TEST_CASE("sampling budget: a long cheap stretch banks no more than the allowance") {
  SamplingBudget b;
  b.start();
  b.spend(0, 2'000'000);  // the allowance used up
  // Ten seconds later the credit is back to the allowance, not to 2.5 s.
  std::uint64_t at = 10'000'000'000;
  CHECK(b.spend(at, 1'000'000) == at);
  CHECK(b.spend(at, 1'000'000) == at);
  CHECK(b.spend(at, 1'000'000) == at + 1'000'000 * b.divisor);
}

TEST_CASE("sampling budget: rebase keeps the debt - suspending does not refill the allowance") {
  SamplingBudget b;
  b.start();
  std::uint64_t wait = b.spend(1'000, 3'000'000);  // 1 ms over the allowance
  CHECK(wait == 1'000 + 1'000'000 * b.divisor);
  b.rebase();  // the timer restarted: program time is 0 again
  CHECK(b.spend(0, 0) == 1'000'000 * b.divisor);
  b.start();  // a fresh run starts with the whole allowance
  CHECK(b.spend(0, 1'000'000) == 0);
}
