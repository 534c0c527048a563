// The blocks an allocation sample fell in, remembered until the program frees them: the in-use
// heap by allocation site (tcmalloc's and Go's heap profile). The allocator hands each sampled
// block in; the next space sample names its site (the stack, walked at a safe point); every
// free of the program asks whether the block is one of them, so that question is the cost paid
// on every free: an open-addressing table kept at most a quarter full, where an untracked
// address nearly always meets an empty slot at its first probe. The interpreter's thread only.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scriptprof/call_tree.hpp"

namespace scriptprof {

class SampledHeap {
 public:
  // One site's estimates (heap_sample_scale per block: see heap_profile.hpp).
  struct Site {
    NodeId leaf;  // the space sample's leaf: the stack
    std::uint32_t process;
    double alloc_objects = 0, alloc_bytes = 0;
    double inuse_objects = 0, inuse_bytes = 0;  // filled by in_use()
  };

  // Forgets everything; sample points fall every `mean_bytes` on average from now.
  void reset(std::uint64_t mean_bytes);
  std::uint64_t mean_bytes() const { return mean_bytes_; }
  std::size_t blocks() const { return count_; }
  // `block` (`size` bytes) held a sample point: remembered until forgotten; its site is the
  // next site() call's.
  void add(const void* block, std::uint64_t size);
  // The program frees `block`. Inline: every free of the program comes here, and nearly every
  // one meets an empty slot at its first probe.
  void forget(const void* block) {
    const auto address = reinterpret_cast<std::uintptr_t>(block);
    if (count_ && slots_[home(address)].address != 0) erase(address);
  }
  // The program's realloc moved `from` to `to`: a tracked block keeps its site and size.
  void move(const void* from, const void* to);
  // The blocks added since the last call were allocated at `leaf`, in `process`.
  void site(NodeId leaf, std::uint32_t process);
  // Something was added, sited, moved or forgotten since the last in_use().
  bool changed() const { return changed_; }
  // Every site with its allocations so far and the blocks it holds now.
  const std::vector<Site>& in_use();

 private:
  struct Slot {
    std::uintptr_t address = 0;  // 0: empty
    std::uint64_t size = 0;
    std::uint32_t site = kNoSite;
  };
  static constexpr std::uint32_t kNoSite = ~0u;
  std::size_t home(std::uintptr_t address) const {
    return static_cast<std::size_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  Slot* find(std::uintptr_t address);
  void insert(const Slot& slot);
  void keep(const Slot& slot);  // insert, growing first to stay a quarter full at most
  void erase(std::uintptr_t address);
  void grow();

  std::vector<Slot> slots_;
  unsigned shift_ = 64;
  std::size_t count_ = 0;
  std::uint64_t mean_bytes_ = 0;
  std::vector<std::pair<std::uintptr_t, std::uint64_t>> unsited_;  // (block, size) since site()
  std::vector<Site> sites_;
  std::unordered_map<NodeId, std::uint32_t> site_of_leaf_;
  bool changed_ = false;
};

}  // namespace scriptprof
