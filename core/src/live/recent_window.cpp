#include "scriptprof/recent_window.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

namespace scriptprof {

namespace {

// What one slot entry and one stored stack cost, for the bound: the hash node with its key and
// count, the bucket pointer; a stack's bytes, its string and intern entry.
constexpr std::size_t kEntryBytes = 48;
constexpr std::size_t kStackBytes = 96;
constexpr std::size_t kSlotBytes = 96;

}  // namespace

RecentWindow::RecentWindow(std::uint64_t window_ns, std::size_t max_bytes)
    : window_ns_(std::max<std::uint64_t>(window_ns, 1'000'000'000)),
      slot_ns_(std::max<std::uint64_t>(1'000'000'000, window_ns_ / 600)),
      max_bytes_(max_bytes) {}

std::uint32_t RecentWindow::intern(const FunctionId* frames, std::size_t count) {
  std::string key(reinterpret_cast<const char*>(frames), count * sizeof(FunctionId));
  auto it = stack_ids_.find(key);
  if (it != stack_ids_.end()) return it->second;
  std::uint32_t id;
  if (!free_stacks_.empty()) {
    id = free_stacks_.back();
    free_stacks_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(stacks_.size());
    stacks_.emplace_back();
  }
  stacks_[id].frames = key;
  stacks_[id].refs = 0;
  bytes_ += key.size() + kStackBytes;
  stack_ids_.emplace(std::move(key), id);
  return id;
}

void RecentWindow::release(std::uint32_t stack) {
  Stack& s = stacks_[stack];
  if (--s.refs > 0) return;
  bytes_ -= s.frames.size() + kStackBytes;
  stack_ids_.erase(s.frames);
  s.frames.clear();
  s.frames.shrink_to_fit();
  free_stacks_.push_back(stack);
}

void RecentWindow::drop_oldest() {
  Slot& old = slots_.front();
  for (const auto& [key, ticks] : old.ticks) {
    release(key.stack);
    bytes_ -= kEntryBytes;
  }
  bytes_ -= kSlotBytes;
  slots_.pop_front();
}

void RecentWindow::add(std::uint64_t now_ns, const LiveFeed::Batch& batch) {
  const std::uint64_t start = now_ns - now_ns % slot_ns_;
  while (!slots_.empty() && slots_.front().start_ns + window_ns_ <= start) drop_oldest();
  if (slots_.empty() || slots_.back().start_ns < start) {
    slots_.push_back(Slot{start, {}});
    bytes_ += kSlotBytes;
  }
  Slot& slot = slots_.back();
  for (const LiveFeed::Sample& s : batch.samples) {
    const Key key{intern(batch.frames.data() + s.first, s.count), s.thread, s.period_ns, s.jit};
    auto [it, fresh] = slot.ticks.emplace(key, 0);
    it->second += s.ticks;
    if (fresh) {  // a new entry holds its stack (a new stack always makes a new entry)
      ++stacks_[key.stack].refs;
      bytes_ += kEntryBytes;
    }
  }
  // Room: the oldest slots go (never the one just filled).
  while (bytes_ > max_bytes_ && slots_.size() > 1) {
    for (const auto& [key, ticks] : slots_.front().ticks) dropped_ += ticks;
    drop_oldest();
  }
}

LiveFeed::Batch RecentWindow::collect(std::uint64_t now_ns, std::uint64_t span_ns) const {
  const std::uint64_t from = now_ns > span_ns ? now_ns - span_ns : 0;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint8_t>, std::uint64_t> sum;
  for (const Slot& slot : slots_)
    if (slot.start_ns >= from)
      for (const auto& [key, ticks] : slot.ticks) sum[{key.stack, key.thread, key.period_ns, key.jit}] += ticks;
  LiveFeed::Batch out;
  for (const auto& [key, ticks] : sum) {
    const auto& [stack, thread, period, jit] = key;
    const std::string& bytes = stacks_[stack].frames;
    const std::size_t count = bytes.size() / sizeof(FunctionId);
    const auto first = static_cast<std::uint32_t>(out.frames.size());
    out.frames.resize(out.frames.size() + count);
    std::memcpy(out.frames.data() + first, bytes.data(), bytes.size());
    out.samples.push_back({thread, first, static_cast<std::uint32_t>(count), ticks, period, jit});
  }
  return out;
}

}  // namespace scriptprof
