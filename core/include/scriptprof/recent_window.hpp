// The recent window of a continuously served run: the samples of the last minutes in bounded
// memory, kept in one-second slots (window/600 for longer windows) of aggregated stacks, each
// stack stored once for all slots. When the slots outgrow `max_bytes` (a request at a high
// rate adds many distinct stacks), the oldest slots go first, their ticks counted as dropped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "scriptprof/live_feed.hpp"

namespace scriptprof {

class RecentWindow {
 public:
  RecentWindow(std::uint64_t window_ns, std::size_t max_bytes);
  // The samples of `batch`, taken by `now_ns` (a monotonic clock), into the slot of now; slots
  // older than the window go.
  void add(std::uint64_t now_ns, const LiveFeed::Batch& batch);
  // The samples of the slots that began in the last `span_ns` before `now_ns` (the current
  // slot included: between span - slot and span), aggregated, as a batch LiveProfileBuilder
  // builds from.
  LiveFeed::Batch collect(std::uint64_t now_ns, std::uint64_t span_ns) const;
  std::size_t bytes() const { return bytes_; }
  std::uint64_t slot_ns() const { return slot_ns_; }
  std::uint64_t dropped_ticks() const { return dropped_; }  // in slots that went for room

 private:
  struct Key {
    std::uint32_t stack, thread;
    std::uint64_t period_ns;
    std::uint8_t jit;
    bool operator==(const Key& o) const {
      return stack == o.stack && thread == o.thread && period_ns == o.period_ns && jit == o.jit;
    }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()((static_cast<std::uint64_t>(k.stack) << 32 | k.thread) ^
                                        ((k.period_ns + k.jit) * 0x9E3779B97F4A7C15ull));
    }
  };
  struct Slot {
    std::uint64_t start_ns;
    std::unordered_map<Key, std::uint64_t, KeyHash> ticks;
  };
  struct Stack {
    std::string frames;  // the FunctionIds' bytes (the intern table's key)
    std::uint32_t refs = 0;  // slot entries using it
  };
  std::uint32_t intern(const FunctionId* frames, std::size_t count);
  void release(std::uint32_t stack);
  void drop_oldest();

  std::uint64_t window_ns_, slot_ns_;
  std::size_t max_bytes_, bytes_ = 0;
  std::uint64_t dropped_ = 0;
  std::deque<Slot> slots_;  // oldest first
  std::vector<Stack> stacks_;
  std::vector<std::uint32_t> free_stacks_;
  std::unordered_map<std::string, std::uint32_t> stack_ids_;
};

}  // namespace scriptprof
