// The share of program time the profiler may spend taking samples.
//
// A token bucket: credit accrues at 1/divisor of program time, up to `allowance_ns`, and each
// sample spends what it cost. While the credit is negative, ticks are not sampled but carried
// as the next sample's weight: sampling at a lower rate, unbiased, and no crawl when every
// walk is slow (a stack 100k frames deep). The allowance absorbs one-off costs, such as a run's
// first sample paying for page faults and first allocations, which would otherwise stop a
// short run's sampling after one sample and leave every later tick to that sample's stack.
//
// Plain normal-context code: the adapter publishes wait_until() in an atomic for its signal
// handler to compare against.
#pragma once
#include <cstdint>

namespace scriptprof {

struct SamplingBudget {
  std::uint64_t divisor = 4;                // long run: at most 1/4 of program time
  std::uint64_t allowance_ns = 2'000'000;   // short run: up to 2 ms of sampling at once

  // A fresh run: the whole allowance is available.
  void start();
  // Program time restarts from 0 (the timer was restarted); the credit carries over, so
  // suspending and resuming does not refill it.
  void rebase();
  // A sample began at program time `at` and cost `cost_ns` (profiler time, not program time).
  // Returns the program time before which no sample may be armed.
  std::uint64_t spend(std::uint64_t at, std::uint64_t cost_ns);

 private:
  std::int64_t credit_ns_ = 0;  // negative: debt, paid back by program time / divisor
  std::uint64_t last_at_ = 0;   // program time the credit was computed at
};

}  // namespace scriptprof
