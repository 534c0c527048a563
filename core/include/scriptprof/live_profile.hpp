// The reader's side of a live feed: keeps the run's function names as the feed tells them, and
// turns the samples of a batch (one collection window) into a profile any writer takes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scriptprof/live_feed.hpp"
#include "scriptprof/profile.hpp"

namespace scriptprof {

class LiveProfileBuilder {
 public:
  // Takes the batch's names (always: a later batch's samples use them).
  void learn(const LiveFeed::Batch& batch);
  // A profile of the batch's samples (learn() first), named `name`, on `clock`, at the period
  // most of its samples were taken at (each sample keeps its own time: its weight is scaled to
  // that period), `seconds` long.
  Profile build(const LiveFeed::Batch& batch, const std::string& name, ClockKind clock, double seconds) const;
  // The run's functions and named processes, as learnt so far.
  const std::vector<FunctionInfo>& functions() const { return functions_; }
  const std::vector<std::pair<std::uint32_t, std::string>>& threads() const { return threads_; }

 private:
  std::vector<FunctionInfo> functions_;  // by id, as the feed defined them
  std::vector<std::pair<std::uint32_t, std::string>> threads_;
};

}  // namespace scriptprof
