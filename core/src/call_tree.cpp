#include "scriptprof/call_tree.hpp"

#include <algorithm>

namespace scriptprof {

NodeId CallTree::new_node(FunctionId function, NodeId parent) {
  NodeId id = static_cast<NodeId>(nodes_.size());
  CallTreeNode n;
  n.function = function;
  n.parent = parent;
  if (parent != kNoNode) {
    n.depth = nodes_[parent].depth + 1;
    // Append after the existing children so iteration is in first-seen order.
    CallTreeNode& p = nodes_[parent];
    if (p.last_child == kNoNode)
      p.first_child = id;
    else
      nodes_[p.last_child].next_sibling = id;
    p.last_child = id;
  }
  nodes_.push_back(n);
  return id;
}

NodeId CallTree::root(std::uint32_t process) {
  for (const auto& r : roots_)
    if (r.first == process) return r.second;
  NodeId id = new_node(kNoFunction, kNoNode);
  roots_.emplace_back(process, id);
  return id;
}

NodeId CallTree::child(NodeId parent, FunctionId function) {
  std::uint64_t key = (std::uint64_t{parent} << 32) | function;
  auto it = children_.find(key);
  if (it != children_.end()) return it->second;
  NodeId id = new_node(function, parent);
  children_.emplace(key, id);
  return id;
}

NodeId CallTree::add_path(std::uint32_t process, const FunctionId* frames, std::size_t n,
                          std::uint64_t weight) {
  NodeId node = root(process);
  nodes_[node].count += weight;
  for (std::size_t i = 0; i < n; ++i) {
    node = child(node, frames[i]);
    nodes_[node].count += weight;
  }
  nodes_[node].self += weight;
  return node;
}

std::vector<FunctionId> CallTree::stack(NodeId leaf) const {
  std::vector<FunctionId> frames;
  for (NodeId n = leaf; n != kNoNode && nodes_[n].parent != kNoNode; n = nodes_[n].parent)
    frames.push_back(nodes_[n].function);
  std::reverse(frames.begin(), frames.end());
  return frames;
}

}  // namespace scriptprof

namespace scriptprof {

std::size_t CallTree::bytes() const {
  // An unordered_map node holds the pair and a next pointer; each has a bucket pointer too.
  constexpr std::size_t kMapEntry = sizeof(std::uint64_t) + sizeof(NodeId) + 2 * sizeof(void*);
  return nodes_.capacity() * sizeof(CallTreeNode) + roots_.capacity() * sizeof(roots_[0]) +
         children_.size() * kMapEntry + children_.bucket_count() * sizeof(void*);
}

}  // namespace scriptprof
