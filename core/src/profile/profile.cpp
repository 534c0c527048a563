#include "scriptprof/profile.hpp"
#include "scriptprof/heap_bytes.hpp"

#include <algorithm>

namespace scriptprof {

FunctionId Profile::add_function(FunctionInfo info) { return functions.add(std::move(info)); }

void Profile::grow_counts() const {
  const std::size_t from = counts_.size();
  counts_.resize(functions.size());
  if (every_function_counted_)
    for (std::size_t f = from; f < counts_.size(); ++f) counts_[f].calls = 0;
}

void Profile::enable_call_counts(bool every_function) {
  calls_counted_ = true;
  if (!every_function) return;
  every_function_counted_ = true;
  for (auto& c : counts_)
    if (!c.calls) c.calls = 0;
}

double Profile::collector_seconds() const {
  if (total_weight_ == 0) return 0.0;
  std::uint64_t in_gc = 0;
  for (FunctionId f = 0; f < functions.size(); ++f)
    if (functions.info(f).collector) in_gc += counts(f).self;
  return total_seconds * static_cast<double>(in_gc) / static_cast<double>(total_weight_);
}

void Profile::add_thread(std::uint32_t id, std::string thread_name, std::uint32_t os_thread) {
  for (auto& t : threads)
    if (t.id == id) {
      t.name = std::move(thread_name);
      if (os_thread) t.os_thread = os_thread;
      return;
    }
  threads.push_back({id, std::move(thread_name), os_thread});
}

// Consecutive samples mostly share a long prefix (time moves on at the top of the stack): the
// frames, lines, tree nodes and line entries of the last sample are kept, and only the frames
// after the shared prefix are looked up. The sample's weight goes to its leaves only; every
// total along the path is derived when first read (settle_counts), so a sample costs a compare
// per frame and lookups only where it differs.
NodeId Profile::add_sample(std::uint32_t thread, std::uint64_t t_ns, std::uint64_t weight,
                         const FunctionId* frames, std::size_t n, const int* lines) {
  total_weight_ += weight;
  settled_.mark_stale();
  const bool same_process = thread == prev_.thread && !prev_.nodes.empty();
  std::size_t common = 0;  // frames equal to the last sample's
  if (same_process)
    while (common < n && common < prev_.frames.size() && frames[common] == prev_.frames[common]) ++common;
  // Once lines came, a sample without them (ticks left at a stop, charged to the last stack)
  // still joins the line-level tree, at line 0: its totals stay the call tree's.
  const bool with_lines = n > 0 && (lines || !locations_.empty());
  std::size_t common_lines = n;  // frames whose function and line equal the last sample's
  if (with_lines) {
    auto line_at = [&](std::size_t i) { return lines && lines[i] > 0 ? lines[i] : 0; };
    common_lines = 0;
    if (same_process && prev_.locations.size() >= common && prev_.lines.size() >= common)
      while (common_lines < common && line_at(common_lines) == prev_.lines[common_lines]) ++common_lines;
    prev_.locations.resize(n);
    prev_.lines.resize(n);
    for (std::size_t i = common_lines; i < n; ++i) prev_.lines[i] = line_at(i);
  }
  // Both trees in one loop, with the locations: the call tree's lookups do not wait on the
  // line tree's, so their cache misses overlap.
  std::vector<NodeId>& nodes = prev_.nodes;
  std::vector<NodeId>& line_nodes = prev_.line_nodes;
  const std::size_t walked = tree.start_path(thread, n, &nodes, common);
  const std::size_t walked_lines = with_lines ? line_tree_.start_path(thread, n, &line_nodes, common_lines) : n;
  for (std::size_t i = std::min(walked, walked_lines); i < n; ++i) {
    if (i >= walked) nodes[i + 1] = tree.child(nodes[i], frames[i]);
    if (i >= walked_lines) {
      prev_.locations[i] = location_of(frames[i], prev_.lines[i]);
      line_nodes[i + 1] = line_tree_.child(line_nodes[i], prev_.locations[i]);
    }
  }
  const NodeId leaf = nodes[n];
  tree.end_path(leaf, weight);
  last_leaf_ = leaf;
  last_line_leaf_ = kNoNode;
  if (with_lines) {
    line_tree_.end_path(line_nodes[n], weight);
    last_line_leaf_ = line_nodes[n];
  }
  if (keep_samples) samples.push_back({leaf, thread, weight, t_ns});
  if (n == 0) {
    empty_weight_ += weight;
    prev_.forget();
    return leaf;
  }
  if (!with_lines) {
    prev_.locations.clear();
    prev_.lines.clear();
  }
  prev_.thread = thread;
  prev_.frames.resize(n);
  for (std::size_t i = common; i < n; ++i) prev_.frames[i] = frames[i];
  return leaf;
}

void Profile::settle_counts() const {
  grow_counts();
  for (FunctionCounts& c : counts_) c.self = c.cumulative = c.occurrences = 0;
  for (LineCounts& c : location_counts_) c = LineCounts{};
  // Depth-first over each tree, with how many nodes above the current one hold each function
  // (location): a node counts cumulatively where that number is 0.
  auto walk = [](const CallTree& t, std::size_t keys, auto&& visit) {
    std::vector<std::uint32_t> above(keys, 0);
    std::vector<std::pair<NodeId, bool>> todo;  // (node, leaving)
    for (const auto& [thread, root] : t.roots()) {
      todo.assign(1, {root, false});
      while (!todo.empty()) {
        auto [id, leaving] = todo.back();
        todo.pop_back();
        const CallTreeNode& node = t.node(id);
        const bool keyed = node.function != kNoFunction;
        if (leaving) {
          if (keyed) --above[node.function];
          continue;
        }
        if (keyed) visit(node, above[node.function]++ == 0);
        todo.push_back({id, true});
        for (NodeId c = node.first_child; c != kNoNode; c = t.node(c).next_sibling) todo.push_back({c, false});
      }
    }
  };
  walk(tree, counts_.size(), [&](const CallTreeNode& node, bool first) {
    FunctionCounts& c = counts_[node.function];
    c.self += node.self;
    // Weight times depth: a deep recursion under a weight near the 2^62 limit passes 2^64, so
    // it saturates there (only a hostile file gets near: the fuzzer's 3e17 samples at 54 levels).
    c.occurrences = c.occurrences > UINT64_MAX - node.count ? UINT64_MAX : c.occurrences + node.count;
    if (first) c.cumulative += node.count;
  });
  walk(line_tree_, location_counts_.size(), [&](const CallTreeNode& node, bool first) {
    if (locations_[node.function].line <= 0) return;  // line unknown: no line counts
    LineCounts& c = location_counts_[node.function];
    c.self += node.self;
    if (first) c.cumulative += node.count;  // recursion on the same line counts once per stack
  });
}

void Profile::add_jit_share(NodeId leaf, std::uint64_t weight, bool compiled) {
  jit_shares = true;
  jit_paths_ = true;
  if (!compiled || leaf == kNoNode || leaf != last_leaf_) return;
  slot(tree.function_of(leaf)).compiled += weight;
  compiled_nodes_[leaf] += weight;
  if (last_line_leaf_ != kNoNode) compiled_line_nodes_[last_line_leaf_] += weight;
}

std::optional<std::uint64_t> Profile::compiled_at(const CallTree& t, NodeId node) const {
  if (!jit_paths_) return std::nullopt;
  const auto& m = &t == &line_tree_ ? compiled_line_nodes_ : compiled_nodes_;
  auto it = m.find(node);
  return it == m.end() ? 0 : it->second;
}

std::map<int, LineCounts> Profile::line_counts(FunctionId f) const {
  settled_.ensure([this] { settle_counts(); });
  std::map<int, LineCounts> out;
  for (std::size_t i = 0; i < locations_.size(); ++i)
    if (locations_[i].function == f && locations_[i].line != 0) out[locations_[i].line] = location_counts_[i];
  return out;
}

// Fibonacci hashing over (function, line), as the call tree's child index.
FunctionId Profile::location_of(FunctionId f, int line) {
  // A function's frames sit at a few lines (its call sites): the last one found is tried
  // first, an array read where the index is a probe into a table of every location.
  if (f < last_location_.size() && last_location_[f].line == line && last_location_[f].function == f)
    return last_location_[f].id;
  const FunctionId id = find_location(f, line);
  if (f >= last_location_.size()) last_location_.resize(std::size_t{f} + 1, {kNoFunction, 0, kNoFunction});
  last_location_[f] = {f, line, id};
  return id;
}

FunctionId Profile::find_location(FunctionId f, int line) {
  if (2 * (locations_.size() + 1) > location_index_.size()) {
    const std::size_t size = location_index_.empty() ? 64 : 2 * location_index_.size();
    location_index_.assign(size, kNoFunction);
    location_shift_ = 64;
    for (std::size_t s = size; s > 1; s >>= 1) --location_shift_;
    for (FunctionId id = 0; id < locations_.size(); ++id) {
      const std::uint64_t key = (std::uint64_t{locations_[id].function} << 32) | static_cast<std::uint32_t>(locations_[id].line);
      std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> location_shift_);
      while (location_index_[i] != kNoFunction) i = (i + 1) & (size - 1);
      location_index_[i] = id;
    }
  }
  const std::size_t mask = location_index_.size() - 1;
  const std::uint64_t key = (std::uint64_t{f} << 32) | static_cast<std::uint32_t>(line);
  std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> location_shift_);
  for (FunctionId id; (id = location_index_[i]) != kNoFunction; i = (i + 1) & mask)
    if (locations_[id].function == f && locations_[id].line == line) return id;
  const auto id = static_cast<FunctionId>(locations_.size());
  locations_.push_back({f, line});
  location_counts_.emplace_back();
  location_index_[i] = id;
  return id;
}

void Profile::add_call(FunctionId callee, bool self_call) {
  FunctionCounts& c = slot(callee);
  c.calls = c.calls.value_or(0) + 1;
  if (self_call) ++c.self_calls;
}

void Profile::add_calls(FunctionId callee, FunctionId caller, std::uint64_t n) {
  FunctionCounts& c = slot(callee);
  c.calls = c.calls.value_or(0) + n;
  if (caller == callee) c.self_calls += n;
  if (caller != kNoFunction) add_arc_calls(caller, callee, n);
}

void Profile::add_arc_calls(FunctionId caller, FunctionId callee, std::uint64_t n) {
  if (callee >= callers_.size()) callers_.resize(std::size_t{callee} + 1);
  auto& list = callers_[callee];
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].first == caller) {
      list[i].second += n;
      if (i > 0) std::swap(list[i], list[i - 1]);  // frequent callers drift to the front
      return;
    }
  list.emplace_back(caller, n);
}

void Profile::set_calls(FunctionId f, std::optional<std::uint64_t> calls, std::uint64_t self_calls) {
  FunctionCounts& c = slot(f);
  c.calls = calls;
  c.self_calls = self_calls;
}

void Profile::clear() {
  functions = FunctionTable{};
  threads.clear();
  tree = CallTree{};
  samples.clear();
  frame_marks.clear();
  counts_.clear();
  jit_shares = false;
  runtime_note.clear();
  total_weight_ = 0;
  empty_weight_ = 0;
  callers_.clear();
  locations_.clear();
  location_counts_.clear();
  location_index_.clear();
  last_location_.clear();
  line_tree_ = CallTree{};
  last_leaf_ = last_line_leaf_ = kNoNode;
  prev_ = LastSample{};
  jit_paths_ = false;
  compiled_nodes_.clear();
  compiled_line_nodes_.clear();
  total_seconds = 0.0;
  gc_seconds = 0.0;
  health = SamplerHealth{};
}

std::vector<NodeId> children_by_count(const Profile& p, NodeId node) {
  std::vector<NodeId> out;
  for (NodeId c = p.tree.node(node).first_child; c != kNoNode; c = p.tree.node(c).next_sibling)
    out.push_back(c);
  std::sort(out.begin(), out.end(), [&](NodeId a, NodeId b) {
    const CallTreeNode &x = p.tree.node(a), &y = p.tree.node(b);
    if (x.count != y.count) return x.count > y.count;
    const std::string &la = p.functions.label(x.function), &lb = p.functions.label(y.function);
    if (la != lb) return la < lb;
    return a < b;
  });
  return out;
}

std::string thread_name(const Profile& p, std::uint32_t thread) {
  for (const ThreadInfo& t : p.threads)
    if (t.id == thread) return t.name;
  return {};
}

std::string thread_label_text(std::uint32_t thread, const std::string& name) {
  return "thread " + std::to_string(thread) + (name.empty() ? "" : ": " + name);
}

std::string thread_label_of(const Profile& p, std::uint32_t thread) {
  return thread_label_text(thread, thread_name(p, thread));
}

std::string thread_label(const Profile& p, NodeId root) {
  for (const auto& r : p.tree.roots())
    if (r.second == root) return thread_label_of(p, r.first);
  return "thread";
}

bool parse_thread_label(std::string_view label, std::uint32_t* thread, std::string* name) {
  constexpr std::string_view kWord = "thread ";
  if (label.substr(0, kWord.size()) != kWord) return false;
  std::size_t i = kWord.size(), digits = 0;
  std::uint64_t n = 0;
  while (i < label.size() && label[i] >= '0' && label[i] <= '9' && digits < 10) {
    n = n * 10 + static_cast<std::uint64_t>(label[i++] - '0');
    ++digits;
  }
  if (digits == 0 || n > 0xFFFFFFFFull) return false;
  if (i == label.size()) {
    name->clear();
  } else if (label.substr(i, 2) == ": ") {
    *name = std::string(label.substr(i + 2));
  } else {
    return false;
  }
  *thread = static_cast<std::uint32_t>(n);
  return true;
}

void for_each_sample_path(const Profile& p,
                          const std::function<void(std::uint32_t, NodeId, const CallTreeNode&,
                                                   const std::vector<FunctionId>&)>& visit) {
  std::vector<FunctionId> path;
  std::vector<NodeId> todo;
  for (const auto& [thread, root] : p.tree.roots()) {
    todo.assign(1, root);
    while (!todo.empty()) {
      const NodeId id = todo.back();
      const CallTreeNode& node = p.tree.node(id);
      todo.pop_back();
      path.resize(node.depth > 0 ? node.depth - 1 : 0);  // depth 0 is the process root
      if (node.function != kNoFunction) path.push_back(node.function);
      if (node.self > 0) visit(thread, id, node, path);
      std::size_t first = todo.size();
      for (NodeId c = node.first_child; c != kNoNode; c = p.tree.node(c).next_sibling) todo.push_back(c);
      std::reverse(todo.begin() + static_cast<std::ptrdiff_t>(first), todo.end());  // first-seen child next
    }
  }
}

std::string check_invariants(const Profile& p) {
  std::uint64_t n = p.sample_weight();
  std::uint64_t self_sum = 0;
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    const FunctionCounts& c = p.counts(f);
    self_sum += c.self;
    if (c.self > c.cumulative || c.cumulative > n || c.cumulative > c.occurrences)
      return "function " + p.functions.label(f) + ": self " + std::to_string(c.self) +
             ", cumulative " + std::to_string(c.cumulative) + ", occurrences " +
             std::to_string(c.occurrences) + ", samples " + std::to_string(n);
  }
  if (self_sum + p.empty_weight() != n)
    return "sum of self counts " + std::to_string(self_sum) + " + empty stacks " +
           std::to_string(p.empty_weight()) + " != samples " + std::to_string(n);
  std::uint64_t roots = 0;
  for (const auto& r : p.tree.roots()) roots += p.tree.node(r.second).count;
  if (roots != n)
    return "call tree roots hold " + std::to_string(roots) + ", samples " + std::to_string(n);
  return {};
}

}  // namespace scriptprof

namespace scriptprof {

std::size_t Profile::bytes() const {
  std::size_t n = functions.bytes() + tree.bytes() + samples.bytes() + heap_bytes(frame_marks) +
                  heap_bytes(threads) + heap_bytes(counts_) + heap_bytes(callers_) + heap_bytes(locations_) +
                  heap_bytes(location_counts_) + heap_bytes(location_index_) + heap_bytes(last_location_) +
                  line_tree_.bytes() + hash_table_bytes(compiled_nodes_) + hash_table_bytes(compiled_line_nodes_);
  for (const auto& arcs : callers_) n += heap_bytes(arcs);
  for (const ThreadInfo& t : threads) n += heap_bytes(t.name);
  return n;
}

}  // namespace scriptprof
