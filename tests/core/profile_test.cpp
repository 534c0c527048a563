#include <catch2/catch.hpp>

#include <malloc.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "example_profile.hpp"
#include "profile_equivalence.hpp"
#include "scriptprof/call_stats.hpp"
#include "scriptprof/profile_merge.hpp"

using namespace scriptprof;

TEST_CASE("worked example: self - cumulative once per stack - occurrences (FORMATS 0.5)") {
  auto e = test::worked_example();
  const Profile& p = e.profile;
  CHECK(p.sample_weight() == 10);
  CHECK(p.counts(e.main).self == 0);
  CHECK(p.counts(e.main).cumulative == 10);
  CHECK(p.counts(e.a).self == 7);
  CHECK(p.counts(e.a).cumulative == 7);   // recursion counted once per stack
  CHECK(p.counts(e.a).occurrences == 11); // Guile 3's every-frame count
  CHECK(p.counts(e.b).self == 3);
  CHECK(p.counts(e.b).cumulative == 3);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("weights count as that many samples") {
  Profile p;
  FunctionId f = p.add_function({"f", "x.lua", 1, 2, FunctionKind::Script});
  FunctionId g = p.add_function({"g", "x.lua", 3, 4, FunctionKind::Script});
  const FunctionId fg[] = {f, g};
  p.add_sample(0, 0, 250, fg, 2);  // one long C call that swallowed 250 ticks
  p.add_sample(0, 1, 1, fg, 1);
  CHECK(p.sample_weight() == 251);
  CHECK(p.counts(g).self == 250);
  CHECK(p.counts(f).self == 1);
  CHECK(p.counts(f).cumulative == 251);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("an empty stack counts toward the total only") {
  Profile p;
  p.add_sample(0, 0, 2, nullptr, 0);
  CHECK(p.sample_weight() == 2);
  CHECK(p.empty_weight() == 2);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("call counts: exact - self calls apart - unknown until counting is on") {
  auto e = test::worked_example();
  Profile& p = e.profile;
  CHECK_FALSE(p.counts(e.a).calls.has_value());
  p.enable_call_counts();
  CHECK(p.counts(e.b).calls == 0u);
  p.add_call(e.main, false);
  p.add_call(e.a, false);
  p.add_call(e.a, true);
  p.add_call(e.b, false);
  CHECK(p.counts(e.a).calls == 2u);
  CHECK(p.counts(e.a).self_calls == 1);
  CHECK(p.counts(e.main).calls == 1u);
}

TEST_CASE("statistics follow statprof's definitions") {
  auto e = test::worked_example();
  Profile& p = e.profile;
  p.enable_call_counts();
  p.add_call(e.a, false);
  p.add_call(e.a, true);
  CHECK(seconds_per_sample(p) == Approx(0.1));
  CallStats a = function_stats(p, e.a);
  CHECK(a.pct_time == Approx(70.0));
  CHECK(a.cum_secs == Approx(0.7));
  CHECK(a.self_secs == Approx(0.7));
  CHECK(a.self_secs_per_call.value() == Approx(0.35));
  CHECK(a.cum_secs_per_call == Approx(0.35));
  CHECK(function_stats(p, e.a, CumulativeMode::EveryFrame).cum_secs == Approx(1.1));
  // main: calls known but 0 -> per-call values divide by max(calls, 1), self per call is 0.
  CallStats m = function_stats(p, e.main);
  CHECK(m.self_secs_per_call.value() == 0.0);
  CHECK(m.cum_secs_per_call == Approx(1.0));

  auto rows = compute_call_stats(p);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].function == e.a);  // self descending
  CHECK(rows[1].function == e.b);
  CHECK(rows[2].function == e.main);
}

// Found by the folded fuzzer: 3.4e17 samples (under the 2^62 limit) of a recursion more than 53
// deep made Guile 3's every-frame count pass 2^64 and wrap below the cumulative count.
TEST_CASE("every-frame counts of a deep recursion under a huge weight saturate, never wrap") {
  Profile p;
  FunctionId f = p.add_function({"f", "x.lua", 1, 2, FunctionKind::Script});
  const std::vector<FunctionId> stack(64, f);
  REQUIRE(p.weight_fits(344444444444444163ull));
  p.add_sample(0, 0, 344444444444444163ull, stack.data(), stack.size());
  CHECK(p.counts(f).cumulative == 344444444444444163ull);
  CHECK(p.counts(f).occurrences == UINT64_MAX);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("invariants hold on thousands of random stacks") {
  std::mt19937 rng(12345);
  Profile p;
  std::vector<FunctionId> fns;
  for (int i = 0; i < 40; ++i)
    fns.push_back(p.add_function({"f" + std::to_string(i), "r.lua", i, i, FunctionKind::Script}));
  std::uint64_t total = 0;
  std::vector<std::uint64_t> self(fns.size(), 0), cum(fns.size(), 0);
  for (int s = 0; s < 5000; ++s) {
    std::vector<FunctionId> stack(rng() % 30);
    for (auto& f : stack) f = fns[rng() % 8 == 0 ? rng() % fns.size() : rng() % 5];  // recursion
    std::uint64_t w = 1 + rng() % 3;
    p.add_sample(0, static_cast<std::uint64_t>(s), w, stack.data(), stack.size());
    total += w;
    // An independent model of the definitions.
    std::vector<bool> seen(fns.size(), false);
    for (FunctionId f : stack)
      if (!seen[f]) seen[f] = true, cum[f] += w;
    if (!stack.empty()) self[stack.back()] += w;
  }
  CHECK(check_invariants(p).empty());
  CHECK(p.sample_weight() == total);
  for (std::size_t i = 0; i < fns.size(); ++i) {
    CHECK(p.counts(fns[i]).self == self[i]);
    CHECK(p.counts(fns[i]).cumulative == cum[i]);
  }
}

TEST_CASE("check_invariants reports a broken profile") {
  Profile p;
  FunctionId f = p.add_function({"f", "x.lua", 1, 1, FunctionKind::Script});
  p.add_sample(0, 0, 1, &f, 1);
  p.clear();
  CHECK(check_invariants(p).empty());
  CHECK(p.sample_weight() == 0);
}

TEST_CASE("labels are unique and readable") {
  Profile p;
  FunctionId a1 = p.add_function({"a", "x.lua", 1, 2, FunctionKind::Script});
  FunctionId a2 = p.add_function({"a", "x.lua", 1, 2, FunctionKind::Script});  // a second closure kept apart
  FunctionId c = p.add_function({"string.rep", "", 0, 0, FunctionKind::Native});
  FunctionId m = p.add_function({"main chunk", "x.lua", 0, 0, FunctionKind::Main});
  FunctionId i = p.add_function({"(idle)", "", 0, 0, FunctionKind::Pseudo});
  CHECK(p.functions.label(a1) == "a (x.lua:1)");
  CHECK(p.functions.label(a2) == "a (x.lua:1) #2");
  CHECK(p.functions.label(c) == "string.rep [C]");
  CHECK(p.functions.label(m) == "main chunk (x.lua)");
  CHECK(p.functions.label(i) == "(idle)");
  p.functions.rename(a1, "better");
  CHECK(p.functions.label(a1) == "better (x.lua:1)");
  CHECK(p.functions.label(a2) == "a (x.lua:1)");
}

// Names read from a file are their own labels, kept once; one that another function's label
// takes first still gets its suffix, and a rename is seen.
TEST_CASE("a name read from a file is its own label, unique like any other") {
  Profile p;
  FunctionId a = p.add_function({"a (x.lua:1)", "", 0, 0, FunctionKind::Named});
  FunctionId s = p.add_function({"a", "x.lua", 1, 2, FunctionKind::Script});
  FunctionId b = p.add_function({"b", "", 0, 0, FunctionKind::Named});
  FunctionId empty = p.add_function({"", "", 0, 0, FunctionKind::Named});
  CHECK(p.functions.label(a) == "a (x.lua:1)");
  CHECK(&p.functions.label(a) == &p.functions.info(a).name);  // not copied
  CHECK(p.functions.label(s) == "a (x.lua:1) #2");
  CHECK(p.functions.label(b) == "b");
  CHECK(p.functions.label(empty) == "?");
  p.functions.rename(b, "c");
  CHECK(p.functions.label(b) == "c");
}

TEST_CASE("a count list: only marked functions have a count, the others are unknown, not 0") {
  Profile p;
  FunctionId listed = p.add_function({"listed", "a.lua", 1});
  FunctionId other = p.add_function({"other", "a.lua", 9});
  p.enable_call_counts(false);
  FunctionId later = p.add_function({"later", "a.lua", 20});
  CHECK(p.calls_counted());
  p.mark_counted(listed);
  CHECK(p.counts(listed).calls == std::optional<std::uint64_t>{0});
  CHECK_FALSE(p.counts(other).calls.has_value());
  CHECK_FALSE(p.counts(later).calls.has_value());
  p.add_call(listed, kNoFunction);
  p.mark_counted(listed);  // marking keeps what was counted
  CHECK(p.counts(listed).calls == std::optional<std::uint64_t>{1});
  Profile every;
  every.add_function({"f", "a.lua", 1});
  every.enable_call_counts();
  FunctionId g = every.add_function({"g", "a.lua", 5});
  CHECK(every.counts(0).calls == std::optional<std::uint64_t>{0});
  CHECK(every.counts(g).calls == std::optional<std::uint64_t>{0});
}

// Every line-tree path (locations as "label:line") with its count and self weight.
static std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> line_paths(const Profile& p) {
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> out;
  std::vector<std::pair<NodeId, std::string>> todo;
  for (const auto& r : p.line_tree().roots()) todo.emplace_back(r.second, std::to_string(r.first));
  while (!todo.empty()) {
    auto [n, prefix] = todo.back();
    todo.pop_back();
    const CallTreeNode& node = p.line_tree().node(n);
    out[prefix].first += node.count;
    out[prefix].second += node.self;
    for (NodeId c = node.first_child; c != kNoNode; c = p.line_tree().node(c).next_sibling) {
      const Profile::Location& at = p.location(p.line_tree().node(c).function);
      todo.emplace_back(c, prefix + "|" + p.functions.label(at.function) + ":" + std::to_string(at.line));
    }
  }
  return out;
}

// One step of a drifting walk, as time moves on in a program: up to 3 frames popped, up to 3
// pushed (any of `functions`, so recursion too, on the same line too), each at line 0-2 (0:
// unknown), the stack kept under `max_depth`.
static void drift(std::mt19937& rng, unsigned functions, std::size_t max_depth, std::vector<FunctionId>* stack,
                  std::vector<int>* lines) {
  const std::size_t pops = std::min<std::size_t>(rng() % 4, stack->size());
  stack->resize(stack->size() - pops);
  lines->resize(stack->size());
  for (std::size_t k = rng() % 4; k > 0 && stack->size() < max_depth; --k) {
    stack->push_back(static_cast<FunctionId>(rng() % functions));
    lines->push_back(static_cast<int>(rng() % 3));
  }
}

TEST_CASE("a sample that shares a prefix with the last one counts as if recorded afresh") {
  // A drifting walk (frames popped and pushed, lines moving, threads switching, an empty stack
  // now and then), recorded once in sequence and once with the last-sample cache dropped before
  // every sample (a copied profile starts afresh): the two profiles must be the same.
  std::mt19937 rng(99);
  Profile seq, fresh;
  for (int i = 0; i < 12; ++i) {
    FunctionInfo info{"g" + std::to_string(i), "w.lua", 10 * i, 10 * i + 9, FunctionKind::Script};
    seq.add_function(info);
    fresh.add_function(info);
  }
  std::vector<FunctionId> stack;
  std::vector<int> lines;
  for (int s = 0; s < 1500; ++s) {
    drift(rng, 12, 40, &stack, &lines);
    if (!lines.empty() && rng() % 3 == 0) lines[rng() % lines.size()] = static_cast<int>(1 + rng() % 3);
    const std::uint32_t thread = rng() % 10 == 0 ? 1 : 0;
    const std::uint64_t w = 1 + rng() % 2;
    const bool empty = rng() % 50 == 0;
    const bool with_lines = s > 20;  // the first samples come without lines, as a run's may
    const std::size_t n = empty ? 0 : stack.size();
    seq.add_sample(thread, 0, w, stack.data(), n, with_lines ? lines.data() : nullptr);
    fresh = Profile(fresh);
    fresh.add_sample(thread, 0, w, stack.data(), n, with_lines ? lines.data() : nullptr);
  }
  CHECK(test::difference(seq, fresh) == "");
  CHECK(line_paths(seq) == line_paths(fresh));
  for (FunctionId f = 0; f < 12; ++f) {
    const auto a = seq.line_counts(f), b = fresh.line_counts(f);
    REQUIRE(a.size() == b.size());
    for (const auto& [line, c] : a) {
      CHECK(b.at(line).self == c.self);
      CHECK(b.at(line).cumulative == c.cumulative);
    }
  }
  CHECK(seq.tree.size() == fresh.tree.size());
}

// The totals are derived on the first read after samples arrive (the recorder touches only the
// leaves): reads between samples, copies and both trees must agree with a model that counts
// every sample in full, as the definitions say.
TEST_CASE("totals read between samples match a model that counts every sample in full") {
  std::mt19937 rng(2024);
  Profile p;
  constexpr int kFns = 9;
  for (int i = 0; i < kFns; ++i) p.add_function({"h" + std::to_string(i), "m.lua", i, i + 1, FunctionKind::Script});
  std::vector<std::uint64_t> self(kFns, 0), cum(kFns, 0), occ(kFns, 0);
  std::map<std::pair<int, int>, LineCounts> lines_model;     // (function, line)
  std::map<std::vector<FunctionId>, std::uint64_t> path_model;  // a path (thread first) -> count
  auto check = [&](const Profile& q) {
    REQUIRE(check_invariants(q).empty());
    for (FunctionId f = 0; f < kFns; ++f) {
      CAPTURE(f);
      CHECK(q.counts(f).self == self[f]);
      CHECK(q.counts(f).cumulative == cum[f]);
      CHECK(q.counts(f).occurrences == occ[f]);
      for (const auto& [line, c] : q.line_counts(f)) {
        CAPTURE(line);
        CHECK(c.self == lines_model[{static_cast<int>(f), line}].self);
        CHECK(c.cumulative == lines_model[{static_cast<int>(f), line}].cumulative);
      }
    }
    // Every node's count is the weight of the samples through its path.
    std::size_t nodes_checked = 0;
    for (NodeId id = 0; id < q.tree.size(); ++id) {
      std::vector<FunctionId> path = q.tree.stack(id);
      NodeId root = id;
      while (q.tree.node(root).parent != kNoNode) root = q.tree.node(root).parent;
      for (const auto& [thread, r] : q.tree.roots())
        if (r == root) path.insert(path.begin(), thread);
      CHECK(q.tree.node(id).count == path_model[path]);
      ++nodes_checked;
    }
    CHECK(nodes_checked == q.tree.size());
  };
  std::vector<FunctionId> stack;
  std::vector<int> lines;
  for (int s = 0; s < 3000; ++s) {
    drift(rng, kFns, 30, &stack, &lines);
    const std::uint32_t thread = rng() % 8 == 0 ? 1 : 0;
    const std::uint64_t w = 1 + rng() % 3;
    const std::size_t n = rng() % 40 == 0 ? 0 : stack.size();
    p.add_sample(thread, 0, w, stack.data(), n, lines.data());
    // The model, sample by sample.
    std::vector<bool> seen(kFns, false);
    std::map<std::pair<int, int>, bool> seen_line;
    std::vector<FunctionId> path{thread};
    path_model[path] += w;
    for (std::size_t i = 0; i < n; ++i) {
      const FunctionId f = stack[i];
      occ[f] += w;
      if (!seen[f]) seen[f] = true, cum[f] += w;
      if (lines[i] > 0 && !seen_line[{static_cast<int>(f), lines[i]}]) {
        seen_line[{static_cast<int>(f), lines[i]}] = true;
        lines_model[{static_cast<int>(f), lines[i]}].cumulative += w;
      }
      path.push_back(f);
      path_model[path] += w;
    }
    if (n > 0) {
      self[stack[n - 1]] += w;
      if (lines[n - 1] > 0) lines_model[{static_cast<int>(stack[n - 1]), lines[n - 1]}].self += w;
    }
    if (s % 500 == 17) check(p);           // a read mid-run, then more samples
    if (s == 1234) check(Profile(p));      // a copy settles on its own
  }
  check(p);
  check(Profile(p));
}

// stats().bytes and the benches report Profile::bytes() as the memory a profile holds. Only
// with glibc's own malloc (the sanitizers bring theirs, which sizes blocks otherwise).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("a profile's bytes() is the heap it takes, within 1%") {
  const struct mallinfo2 before = mallinfo2();
  auto p = std::make_unique<Profile>();
  p->keep_samples = true;
  p->enable_call_counts();
  constexpr unsigned kFns = 3000;
  for (unsigned i = 0; i < kFns; ++i)
    p->add_function({"a_function_named_" + std::to_string(i), "some/directory/module_" + std::to_string(i % 50) + ".lua",
                     static_cast<int>(i)});
  std::mt19937 rng(11);
  std::vector<FunctionId> stack;
  std::vector<int> lines;
  for (int s = 0; s < 30000; ++s) {
    drift(rng, kFns, 30, &stack, &lines);
    p->add_sample(rng() % 4, static_cast<std::uint64_t>(s) * 1000, 1, stack.data(), stack.size(), lines.data());
    if (stack.size() >= 2) p->add_calls(stack.back(), stack[stack.size() - 2], 1);
  }
  (void)p->counts(0);  // the totals settle, and the labels are made, on first read
  (void)p->functions.label(0);
  const std::size_t reported = p->bytes();
  const struct mallinfo2 after = mallinfo2();
  const double taken = static_cast<double>((after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd));
  INFO("reported " << reported << " bytes, the heap grew by " << taken);
  CHECK(static_cast<double>(reported) >= 0.99 * taken);
  CHECK(static_cast<double>(reported) <= 1.01 * taken);
}
#endif

// Several runs of a JIT runtime merged (a served host's LuaJIT states, a thread per session of
// the C API) keep each path's compiled share: pprof's jit label and the compiled column.
TEST_CASE("Merging profiles keeps each path's JIT-compiled share") {
  auto run = [](std::uint32_t thread, std::uint64_t compiled, std::uint64_t interpreted) {
    Profile p;
    const FunctionId main = p.add_function({"main", "w.lua", 1, 0, FunctionKind::Script});
    const FunctionId loop = p.add_function({"loop", "w.lua", 5, 0, FunctionKind::Script});
    const FunctionId stack[] = {main, loop};
    NodeId leaf = p.add_sample(thread, 0, compiled, stack, 2);
    p.add_jit_share(leaf, compiled, true);
    leaf = p.add_sample(thread, 0, interpreted, stack, 2);
    p.add_jit_share(leaf, interpreted, false);
    return p;
  };
  Profile merged;
  merge_profile(&merged, run(1, 30, 10));
  merge_profile(&merged, run(2, 5, 15));
  REQUIRE(merged.jit_shares);
  FunctionId loop = kNoFunction;
  for (FunctionId f = 0; f < merged.functions.size(); ++f)
    if (merged.functions.info(f).name == "loop") loop = f;
  REQUIRE(loop != kNoFunction);
  CHECK(merged.counts(loop).self == 60);
  CHECK(merged.counts(loop).compiled == 35);
  // Per path: each thread's leaf keeps its own share.
  std::vector<std::uint64_t> shares;
  for (const auto& [thread, root] : merged.tree.roots())
    for (NodeId n = merged.tree.node(root).first_child; n != kNoNode; n = merged.tree.node(n).next_sibling)
      for (NodeId c = merged.tree.node(n).first_child; c != kNoNode; c = merged.tree.node(c).next_sibling)
        shares.push_back(merged.compiled_at(merged.tree, c).value_or(999));
  CHECK(shares == std::vector<std::uint64_t>{30, 5});
}
