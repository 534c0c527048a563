// The live feed: a run's time samples and the names they use, handed from the interpreter's
// thread (the engine, at its safe points) to a reader on another thread (the profile server).
//
// Data goes one way. The engine appends; the reader takes everything appended so far in one
// swap. Both hold the feed's mutex only for that append or swap, never while a profile is
// built, so the interpreter's thread waits at most for a swap of a few vectors. Samples beyond
// `max_bytes` waiting are dropped and counted; a function's definition is never dropped (a
// later sample would name an id the reader does not know), and there is one per function.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scriptprof/function_table.hpp"
#include "scriptprof/heap_profile.hpp"

namespace scriptprof {

class LiveFeed {
 public:
  // What one take() hands over, in the order the engine appended it.
  struct Sample {
    std::uint32_t thread;
    std::uint32_t first, count;  // its frames in Batch::frames, root first
    std::uint64_t ticks;         // the sample's weight in ticks
    std::uint64_t period_ns;     // the timer's period when it was taken
    std::uint8_t jit = 0;        // a JIT runtime said: 1 interpreted, 2 compiled (0: not told)
  };
  // A frame boundary (profiler.frame()): the thread's samples before `sample` (an index in
  // Batch::samples) are the frame that ended, at `mono_ns` (CLOCK_MONOTONIC).
  struct FrameMark {
    std::uint32_t thread;
    std::uint32_t sample;
    std::uint64_t mono_ns;
  };
  struct Batch {
    std::vector<std::pair<FunctionId, FunctionInfo>> functions;  // new ids, in id order
    std::vector<std::pair<FunctionId, std::string>> renames;
    std::vector<std::pair<std::uint32_t, std::string>> threads;  // named processes
    std::vector<FunctionId> frames;
    std::vector<Sample> samples;
    std::vector<FrameMark> frames_marked;
    std::uint64_t dropped = 0;  // ticks of the samples that found the feed full
    std::optional<HeapSnapshot> heap;  // the latest in-use heap published, if any since
  };

  explicit LiveFeed(std::size_t max_bytes = std::size_t{8} << 20) : max_bytes_(max_bytes) {}
  LiveFeed(const LiveFeed&) = delete;
  LiveFeed& operator=(const LiveFeed&) = delete;

  // ---- The interpreter's thread (the engine) ----
  void define_function(FunctionId id, const FunctionInfo& info);
  void rename_function(FunctionId id, const std::string& name);
  void name_thread(std::uint32_t id, const std::string& name);
  // A time sample of `frames` (root first) weighing `ticks` of `period_ns` each.
  void add_sample(std::uint32_t thread, const FunctionId* frames, std::size_t count, std::uint64_t ticks,
                  std::uint64_t period_ns);
  // The last sample added ran JIT-compiled code (or not), as the runtime's VM state said.
  void mark_jit(bool compiled);
  // A frame of `thread` ends now (dropped with the samples when the feed is full).
  void mark_frame(std::uint32_t thread);
  // The in-use heap after a GC cycle (built outside the lock): replaces one not yet taken.
  void publish_heap(HeapSnapshot snapshot);

  // ---- The reader ----
  // Everything appended since the last take.
  Batch take();

 private:
  std::mutex mutex_;
  Batch pending_;
  std::size_t max_bytes_;
};

}  // namespace scriptprof
