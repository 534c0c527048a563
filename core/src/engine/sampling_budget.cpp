#include "scriptprof/sampling_budget.hpp"

#include <algorithm>

namespace scriptprof {

void SamplingBudget::start() {
  credit_ns_ = static_cast<std::int64_t>(allowance_ns);
  last_at_ = 0;
}

void SamplingBudget::rebase() { last_at_ = 0; }

std::uint64_t SamplingBudget::spend(std::uint64_t at, std::uint64_t cost_ns) {
  const std::int64_t cap = static_cast<std::int64_t>(allowance_ns);
  const std::uint64_t d = std::max<std::uint64_t>(divisor, 1);
  std::uint64_t earned = at > last_at_ ? (at - last_at_) / d : 0;
  last_at_ = std::max(last_at_, at);
  // Never more than the cap, however long the cheap stretch before (and no overflow).
  std::uint64_t room = static_cast<std::uint64_t>(cap - std::min(credit_ns_, cap));
  std::int64_t credit = earned >= room ? cap : credit_ns_ + static_cast<std::int64_t>(earned);
  credit_ns_ = credit - static_cast<std::int64_t>(cost_ns);
  if (credit_ns_ >= 0) return at;
  return at + static_cast<std::uint64_t>(-credit_ns_) * d;
}

}  // namespace scriptprof
