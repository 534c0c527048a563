#include "scriptprof/sample_log.hpp"
#include "scriptprof/heap_bytes.hpp"

#include <algorithm>

namespace scriptprof {
namespace {

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

std::uint64_t get_varint(const std::vector<std::uint8_t>& in, std::size_t* offset) {
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const std::uint8_t b = in[(*offset)++];
    v |= std::uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
}

// A time step as an unsigned number, small for small steps either way (samples merged from
// several threads need not be in time order).
std::uint64_t zigzag(std::int64_t v) { return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63); }
std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }

}  // namespace

// Per sample: varint(zigzag(leaf step)), varint(zigzag(time step) << 1 | weight != 1), and
// varint(weight) when it is not 1. A sample never spans two chunks.
void SampleLog::push_back(const SampleRecord& r) {
  if (chunks_.empty() || chunks_.back().size() + kMaxSampleBytes > kChunkBytes) {
    chunks_.emplace_back();
    chunks_.back().reserve(kChunkBytes);
  }
  std::vector<std::uint8_t>& out = chunks_.back();
  if (size_ % kCheckpointEvery == 0)
    checkpoints_.push_back({{static_cast<std::uint32_t>(chunks_.size() - 1), static_cast<std::uint32_t>(out.size())},
                            last_t_, last_leaf_});
  if (threads_.empty() || threads_.back().thread != r.thread) threads_.push_back({size_, r.thread});
  put_varint(out, zigzag(static_cast<std::int64_t>(r.leaf) - static_cast<std::int64_t>(last_leaf_)));
  put_varint(out, zigzag(static_cast<std::int64_t>(r.t_ns - last_t_)) << 1 | (r.weight != 1));
  if (r.weight != 1) put_varint(out, r.weight);
  last_t_ = r.t_ns;
  last_leaf_ = r.leaf;
  ++size_;
}

void SampleLog::decode(Position* at, std::uint64_t* t_ns, NodeId* leaf, std::uint64_t* weight) const {
  const std::vector<std::uint8_t>& in = chunks_[at->chunk];
  std::size_t offset = at->offset;
  *leaf = static_cast<NodeId>(static_cast<std::int64_t>(*leaf) + unzigzag(get_varint(in, &offset)));
  const std::uint64_t head = get_varint(in, &offset);
  *t_ns += static_cast<std::uint64_t>(unzigzag(head >> 1));
  *weight = (head & 1) ? get_varint(in, &offset) : 1;
  if (offset == in.size() && at->chunk + 1 < chunks_.size()) {
    ++at->chunk;
    at->offset = 0;
  } else {
    at->offset = static_cast<std::uint32_t>(offset);
  }
}

std::uint32_t SampleLog::thread_at(std::size_t i) const {
  auto it = std::upper_bound(threads_.begin(), threads_.end(), i,
                             [](std::size_t index, const ThreadRun& run) { return index < run.first; });
  return std::prev(it)->thread;
}

SampleRecord SampleLog::operator[](std::size_t i) const {
  const Checkpoint& c = checkpoints_[i / kCheckpointEvery];
  Position at = c.at;
  SampleRecord r{c.leaf, 0, 1, c.t_ns};
  for (std::size_t k = i - i % kCheckpointEvery; k <= i; ++k) decode(&at, &r.t_ns, &r.leaf, &r.weight);
  r.thread = thread_at(i);
  return r;
}

SampleLog::const_iterator SampleLog::begin() const { return const_iterator(this, 0); }
SampleLog::const_iterator SampleLog::end() const { return const_iterator(this, size()); }

std::size_t SampleLog::bytes() const {
  std::size_t n = heap_bytes(chunks_) + heap_bytes(threads_) + heap_bytes(checkpoints_);
  for (const auto& c : chunks_) n += heap_bytes(c);
  return n;
}

// Decodes the sample at index_ from the one before it (the iterator walks in order).
void SampleLog::const_iterator::load() {
  if (index_ >= log_->size()) return;
  if (index_ == 0) current_ = SampleRecord{0, 0, 1, 0};
  while (run_ + 1 < log_->threads_.size() && log_->threads_[run_ + 1].first <= index_) ++run_;
  log_->decode(&at_, &current_.t_ns, &current_.leaf, &current_.weight);
  current_.thread = log_->threads_[run_].thread;
}

}  // namespace scriptprof
