#include "scriptprof/call_tree.hpp"
#include "scriptprof/heap_bytes.hpp"

#include <algorithm>

namespace scriptprof {

NodeId CallTree::new_node(FunctionId function, NodeId parent) {
  NodeId id = static_cast<NodeId>(size_);
  CallTreeNode n;
  n.function = function;
  n.parent = parent;
  if (parent != kNoNode) {
    n.depth = at(parent).depth + 1;
    // Append after the existing children so iteration is in first-seen order.
    CallTreeNode& p = at(parent);
    if (p.last_child == kNoNode)
      p.first_child = id;
    else
      at(p.last_child).next_sibling = id;
    p.last_child = id;
  }
  if ((id & kChunkMask) == 0) {
    chunks_.emplace_back();
    // The first chunk grows as a vector does (a small profile stays small); the others are
    // taken whole.
    if (chunks_.size() > 1) chunks_.back().reserve(std::size_t{1} << kChunkBits);
  }
  chunks_.back().push_back(n);
  ++size_;
  return id;
}

NodeId CallTree::root(std::uint32_t process) {
  for (const auto& r : roots_)
    if (r.first == process) return r.second;
  NodeId id = new_node(kNoFunction, kNoNode);
  roots_.emplace_back(process, id);
  return id;
}

// Fibonacci hashing: the multiply spreads (parent, function) over the high bits, which pick
// the slot.
std::size_t CallTree::slot_of(NodeId parent, FunctionId function) const {
  const std::uint64_t key = (std::uint64_t{parent} << 32) | function;
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> index_shift_);
}

NodeId CallTree::child(NodeId parent, FunctionId function) {
  // Children are every node but the roots; the index stays at most half full.
  if (2 * (size_ + 1 - roots_.size()) > index_.size()) grow_index();
  const std::size_t mask = index_.size() - 1;
  std::size_t i = slot_of(parent, function);
  for (NodeId id; (id = index_[i]) != kNoNode; i = (i + 1) & mask)
    if (raw(id).parent == parent && raw(id).function == function) return id;
  NodeId id = new_node(function, parent);
  index_[i] = id;
  return id;
}

void CallTree::grow_index() {
  const std::size_t size = index_.empty() ? 64 : 2 * index_.size();
  index_.assign(size, kNoNode);
  index_shift_ = 64;
  for (std::size_t s = size; s > 1; s >>= 1) --index_shift_;
  const std::size_t mask = size - 1;
  for (NodeId id = 0; id < size_; ++id) {
    if (raw(id).parent == kNoNode) continue;
    std::size_t i = slot_of(raw(id).parent, raw(id).function);
    while (index_[i] != kNoNode) i = (i + 1) & mask;
    index_[i] = id;
  }
}

std::size_t CallTree::start_path(std::uint32_t process, std::size_t n, std::vector<NodeId>* path,
                                 std::size_t common) {
  std::vector<NodeId>& nodes = *path;
  if (common == 0 || nodes.empty()) {
    nodes.assign(1, root(process));
    common = 0;
  }
  nodes.resize(n + 1);
  return common;
}

void CallTree::settle_counts() const {
  for (auto& chunk : chunks_)
    for (CallTreeNode& n : chunk) n.count = n.self;
  for (NodeId id = static_cast<NodeId>(size_); id-- > 0;) {
    const CallTreeNode& n = raw(id);
    if (n.parent != kNoNode) chunks_[n.parent >> kChunkBits][n.parent & kChunkMask].count += n.count;
  }
}

std::vector<FunctionId> CallTree::stack(NodeId leaf) const {
  std::vector<FunctionId> frames;
  for (NodeId n = leaf; n != kNoNode && raw(n).parent != kNoNode; n = raw(n).parent)
    frames.push_back(raw(n).function);
  std::reverse(frames.begin(), frames.end());
  return frames;
}

}  // namespace scriptprof

namespace scriptprof {

std::size_t CallTree::bytes() const {
  std::size_t n = heap_bytes(chunks_) + heap_bytes(roots_) + heap_bytes(index_);
  for (const auto& chunk : chunks_) n += heap_bytes(chunk);
  return n;
}

}  // namespace scriptprof
