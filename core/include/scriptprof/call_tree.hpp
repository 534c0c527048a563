// The call tree: one node per distinct call path, one root per process (thread).
// It is also the compact store of full stacks: a sample is just its leaf node.
#pragma once
#include <cstdint>
#include <vector>

#include "scriptprof/function_table.hpp"
#include "scriptprof/settle_flag.hpp"

namespace scriptprof {

using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = 0xffffffffu;

struct CallTreeNode {
  FunctionId function = kNoFunction;  // kNoFunction for a process root
  NodeId parent = kNoNode;            // kNoNode for a process root
  NodeId first_child = kNoNode;       // children in first-seen order, linked by next_sibling
  NodeId next_sibling = kNoNode;
  NodeId last_child = kNoNode;        // so appending a child is O(1)
  std::uint32_t depth = 0;            // 0 for a process root
  std::uint64_t count = 0;            // weight of samples whose stack passes through this path
  std::uint64_t self = 0;             // weight of samples ending exactly here
};

// The call tree takes a sample's weight at its leaf only (`self`); the `count` of every node on
// the path is derived on the first read after a change (settle_counts), so recording costs the
// frames that differ from the last sample, not the depth of the stack.
class CallTree {
 public:
  // Root node of a process, created on first use.
  NodeId root(std::uint32_t process);
  // Child of `parent` for `function`, created on first use.
  NodeId child(NodeId parent, FunctionId function);
  // A sample's path, in three steps, so that a caller can walk two trees in one loop (their
  // cache misses then overlap). start_path: `path` holds the previous path of the same process
  // (the root first, then one node per frame) whose first `common` frames equal this one's (0:
  // none, or no previous path); it is sized for `n` frames, and the frames already walked are
  // returned. The caller sets path[i + 1] = child(path[i], frames[i]) for the rest. end_path:
  // the leaf (path[n]; the process root for an empty stack) takes the sample's weight, and the
  // counts above it follow on the next read.
  std::size_t start_path(std::uint32_t process, std::size_t n, std::vector<NodeId>* path, std::size_t common);
  void end_path(NodeId leaf, std::uint64_t weight) {
    at(leaf).self += weight;
    settled_.mark_stale();
  }

  // A node with its counts settled.
  const CallTreeNode& node(NodeId id) const {
    settled_.ensure([this] { settle_counts(); });
    return raw(id);
  }
  // A node's function, which never changes: no settling (for the recording path).
  FunctionId function_of(NodeId id) const { return raw(id).function; }
  std::size_t size() const { return size_; }
  // Process roots in first-seen order, as (process, node).
  const std::vector<std::pair<std::uint32_t, NodeId>>& roots() const { return roots_; }
  // Frames of the path ending at `leaf`, root-first (the process root excluded).
  std::vector<FunctionId> stack(NodeId leaf) const;
  // Heap bytes of the nodes and the child index.
  std::size_t bytes() const;

 private:
  const CallTreeNode& raw(NodeId id) const { return chunks_[id >> kChunkBits][id & kChunkMask]; }
  CallTreeNode& at(NodeId id) { return chunks_[id >> kChunkBits][id & kChunkMask]; }
  // Every count as its self weight plus its children's counts. A child is always made after
  // its parent, so one pass from the last node to the first sees every child before its parent.
  void settle_counts() const;
  NodeId new_node(FunctionId function, NodeId parent);
  std::size_t slot_of(NodeId parent, FunctionId function) const;
  void grow_index();

  // Nodes in fixed chunks (80 KB): a growing tree never copies its nodes, and the chunks come
  // from the heap's free lists, reused run after run, where one vector's doublings went to
  // fresh mmap'd pages each time (page faults and copies were most of a deep stack's cost).
  static constexpr unsigned kChunkBits = 11;
  static constexpr NodeId kChunkMask = (NodeId{1} << kChunkBits) - 1;
  mutable std::vector<std::vector<CallTreeNode>> chunks_;  // counts settled from const readers
  SettleFlag settled_;
  std::size_t size_ = 0;
  std::vector<std::pair<std::uint32_t, NodeId>> roots_;
  // The child index: open addressing over node ids (kNoNode: empty), probed from a hash of
  // (parent, function) and matched against the node itself. 4 bytes a slot and no allocation
  // per node, where a node-based map cost ~40 bytes and a malloc for every new call path.
  std::vector<NodeId> index_;
  unsigned index_shift_ = 64;  // 64 - log2(index_.size())
};

}  // namespace scriptprof
