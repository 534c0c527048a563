// Every sample of a run kept with full stacks, in the order they came, compactly: a sample is
// its stack interned as the call tree leaf and its time, each as a varint of the step from the
// sample before (a leaf 1-3 bytes, a time step 3-4 bytes at 1-10 kHz, a weight only when it is
// not 1), where a plain record took 24 bytes. The bytes sit in fixed chunks (no slack from
// doubling), threads are kept as runs, and a checkpoint every 64 samples gives indexing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "scriptprof/call_tree.hpp"

namespace scriptprof {

// One recorded sample of a run kept with full stacks (its stack is the path to `leaf`).
struct SampleRecord {
  NodeId leaf;            // call tree node of the innermost frame
  std::uint32_t thread;   // ThreadInfo::id
  std::uint64_t weight;   // ticks (or bytes) this sample stands for
  std::uint64_t t_ns;     // profiled time since the start of the run
};

class SampleLog {
 public:
  class const_iterator;

  void push_back(const SampleRecord& r);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { *this = SampleLog{}; }
  // The i-th sample (decodes from the checkpoint before it: up to 64 samples).
  SampleRecord operator[](std::size_t i) const;
  const_iterator begin() const;
  const_iterator end() const;
  // Heap bytes held.
  std::size_t bytes() const;

 private:
  static constexpr std::size_t kCheckpointEvery = 64;
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  static constexpr std::size_t kMaxSampleBytes = 3 * 10;  // three varints of at most 10 bytes
  struct Position {
    std::uint32_t chunk = 0;
    std::uint32_t offset = 0;
  };
  struct Checkpoint {
    Position at;               // where the sample's bytes start
    std::uint64_t t_ns = 0;    // time and leaf of the sample before it (0 for the first)
    NodeId leaf = 0;
  };
  struct ThreadRun {
    std::size_t first;    // index of the run's first sample
    std::uint32_t thread;
  };
  // Decodes the sample at `at` after one at (*t_ns, *leaf); moves `at` past it.
  void decode(Position* at, std::uint64_t* t_ns, NodeId* leaf, std::uint64_t* weight) const;
  std::uint32_t thread_at(std::size_t i) const;

  std::vector<std::vector<std::uint8_t>> chunks_;
  std::size_t size_ = 0;
  std::vector<ThreadRun> threads_;
  std::vector<Checkpoint> checkpoints_;
  std::uint64_t last_t_ = 0;
  NodeId last_leaf_ = 0;

  friend class const_iterator;
};

// Yields SampleRecords by value, decoding as it goes.
class SampleLog::const_iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = SampleRecord;
  using difference_type = std::ptrdiff_t;
  using pointer = const SampleRecord*;
  using reference = SampleRecord;

  SampleRecord operator*() const { return current_; }
  const SampleRecord* operator->() const { return &current_; }
  const_iterator& operator++() {
    ++index_;
    load();
    return *this;
  }
  bool operator==(const const_iterator& o) const { return index_ == o.index_; }
  bool operator!=(const const_iterator& o) const { return index_ != o.index_; }

 private:
  friend class SampleLog;
  const_iterator(const SampleLog* log, std::size_t index) : log_(log), index_(index) { load(); }
  void load();

  const SampleLog* log_;
  std::size_t index_;
  Position at_;              // where the bytes of the sample at index_ start
  std::size_t run_ = 0;      // threads_ run of the sample at index_
  SampleRecord current_{};
};

}  // namespace scriptprof
