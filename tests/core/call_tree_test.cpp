#include <catch2/catch.hpp>

#include "example_profile.hpp"

using namespace scriptprof;

namespace {
NodeId find_child(const CallTree& t, NodeId parent, FunctionId f) {
  for (NodeId c = t.node(parent).first_child; c != kNoNode; c = t.node(c).next_sibling)
    if (t.node(c).function == f) return c;
  return kNoNode;
}
}  // namespace

TEST_CASE("call tree keeps every level: path and terminal counts of the worked example") {
  auto e = test::worked_example();
  const CallTree& t = e.profile.tree;
  REQUIRE(t.roots().size() == 1);
  NodeId root = t.roots()[0].second;
  CHECK(t.node(root).count == 10);
  NodeId main = find_child(t, root, e.main);
  NodeId ma = find_child(t, main, e.a);
  NodeId maa = find_child(t, ma, e.a);
  NodeId mb = find_child(t, main, e.b);
  REQUIRE((main != kNoNode && ma != kNoNode && maa != kNoNode && mb != kNoNode));
  CHECK(t.node(main).count == 10);
  CHECK(t.node(ma).count == 7);
  CHECK(t.node(maa).count == 4);
  CHECK(t.node(mb).count == 3);
  CHECK(t.node(ma).self == 3);
  CHECK(t.node(maa).self == 4);
  CHECK(t.node(maa).depth == 3);
  CHECK(t.stack(maa) == std::vector<FunctionId>{e.main, e.a, e.a});
  // Children come in first-seen order.
  CHECK(t.node(main).first_child == ma);
  CHECK(t.node(ma).next_sibling == mb);
}

TEST_CASE("full stacks are kept compactly as leaf nodes - in sample order") {
  auto e = test::worked_example();
  const FunctionId mb[] = {e.main, e.b};
  e.profile.add_sample(0, 1'000'000'000, 2, mb, 2);
  REQUIRE(e.profile.samples.size() == 11);
  CHECK(e.profile.tree.stack(e.profile.samples[1].leaf) == std::vector<FunctionId>{e.main, e.a, e.a});
  const SampleRecord& r = e.profile.samples[10];
  CHECK(r.weight == 2);
  CHECK(e.profile.tree.stack(r.leaf) == std::vector<FunctionId>{e.main, e.b});
}

TEST_CASE("one root per process") {
  Profile p;
  FunctionId f = p.add_function({"f", "x.lua", 1, 1, FunctionKind::Script});
  p.add_sample(0, 0, 1, &f, 1);
  p.add_sample(7, 0, 2, &f, 1);
  const CallTree& t = p.tree;
  REQUIRE(t.roots().size() == 2);
  CHECK(t.roots()[1].first == 7);
  CHECK(t.node(t.roots()[1].second).count == 2);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("a very deep stack does not recurse") {
  Profile p;
  FunctionId f = p.add_function({"deep", "x.lua", 1, 1, FunctionKind::Script});
  std::vector<FunctionId> stack(200000, f);
  p.add_sample(0, 0, 1, stack.data(), stack.size());
  CHECK(p.counts(f).cumulative == 1);
  CHECK(p.counts(f).occurrences == 200000);
  CHECK(p.tree.size() == 200001);
  CHECK(p.tree.stack(static_cast<NodeId>(p.tree.size() - 1)).size() == 200000);
}
