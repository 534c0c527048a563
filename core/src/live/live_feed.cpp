#include "scriptprof/live_feed.hpp"

#include "scriptprof/sampling_timer.hpp"  // clock_ns

namespace scriptprof {

void LiveFeed::define_function(FunctionId id, const FunctionInfo& info) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.functions.emplace_back(id, info);
}

void LiveFeed::rename_function(FunctionId id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.renames.emplace_back(id, name);
}

void LiveFeed::name_thread(std::uint32_t id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.threads.emplace_back(id, name);
}

void LiveFeed::add_sample(std::uint32_t thread, const FunctionId* frames, std::size_t count, std::uint64_t ticks,
                          std::uint64_t period_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t bytes =
      (pending_.frames.size() + count) * sizeof(FunctionId) + (pending_.samples.size() + 1) * sizeof(Sample);
  if (bytes > max_bytes_ || count > 0xFFFFFFFFu - pending_.frames.size()) {
    pending_.dropped += ticks;
    return;
  }
  const auto first = static_cast<std::uint32_t>(pending_.frames.size());
  pending_.frames.insert(pending_.frames.end(), frames, frames + count);
  pending_.samples.push_back({thread, first, static_cast<std::uint32_t>(count), ticks, period_ns});
}

void LiveFeed::mark_jit(bool compiled) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_.samples.empty()) pending_.samples.back().jit = compiled ? 2 : 1;
}

void LiveFeed::mark_frame(std::uint32_t thread) {
  const std::uint64_t now = clock_ns(CLOCK_MONOTONIC);
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.frames_marked.size() * sizeof(FrameMark) > max_bytes_) return;
  pending_.frames_marked.push_back({thread, static_cast<std::uint32_t>(pending_.samples.size()), now});
}

void LiveFeed::publish_heap(HeapSnapshot snapshot) {
  std::optional<HeapSnapshot> replaced;  // freed after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  replaced.swap(pending_.heap);
  pending_.heap = std::move(snapshot);
}

LiveFeed::Batch LiveFeed::take() {
  Batch out;
  std::lock_guard<std::mutex> lock(mutex_);
  std::swap(out, pending_);
  return out;
}

}  // namespace scriptprof
