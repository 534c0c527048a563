// The call tree: one node per distinct call path, one root per process (thread).
// It is also the compact store of full stacks: a sample is just its leaf node.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "scriptprof/function_table.hpp"

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

class CallTree {
 public:
  // Root node of a process, created on first use.
  NodeId root(std::uint32_t process);
  // Child of `parent` for `function`, created on first use.
  NodeId child(NodeId parent, FunctionId function);
  // Walks a root-first stack from the process root, adding `weight` to every node on the path.
  // Returns the leaf node (the process root for an empty stack).
  NodeId add_path(std::uint32_t process, const FunctionId* frames, std::size_t n, std::uint64_t weight);

  const CallTreeNode& node(NodeId id) const { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  // Process roots in first-seen order, as (process, node).
  const std::vector<std::pair<std::uint32_t, NodeId>>& roots() const { return roots_; }
  // Frames of the path ending at `leaf`, root-first (the process root excluded).
  std::vector<FunctionId> stack(NodeId leaf) const;
  // Heap bytes of the nodes and the child index.
  std::size_t bytes() const;

 private:
  NodeId new_node(FunctionId function, NodeId parent);

  std::vector<CallTreeNode> nodes_;
  std::vector<std::pair<std::uint32_t, NodeId>> roots_;
  std::unordered_map<std::uint64_t, NodeId> children_;  // (parent << 32 | function) -> child
};

}  // namespace scriptprof
