// The engine driven by a fake adapter: every path of a run without any interpreter.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "function_lookup.hpp"
#include "scriptprof/process_chain.hpp"
#include "scriptprof/sampler_engine.hpp"

using namespace scriptprof;

namespace {

// A runtime whose "stack" is a list of function ids the test sets, and whose arm answers what
// the test says.
struct FakeAdapter : RuntimeAdapter, TickArm {
  Capabilities caps;
  ArmResult answer = ArmResult::Armed;
  ArmResult blocked_answer = ArmResult::NotNow;  // arm_blocked's
  int arms = 0, disarms = 0;
  Capabilities capabilities() const override { return caps; }
  TickArm& tick_arm() override { return *this; }
  ArmResult arm(const ArmContext&) override {
    ++arms;
    return answer;
  }
  ArmResult arm_blocked(const ArmContext&) override { return blocked_answer; }
  void disarm(const ArmContext&) override { ++disarms; }
  FakeAdapter() {
    caps.runtime = "Fake 1.0";
    caps.signal_arm = true;
  }
};

// Settings whose real timer never ticks during a test: ticks come from the test.
RunSettings quiet() {
  RunSettings s;
  s.period_ns = 10'000'000'000;  // 0.1 Hz
  return s;
}

// The adapter's safe point: takes what is pending and records `stack` (root first).
void safe_point(SamplerEngine& e, const std::vector<FunctionId>& stack, std::uint32_t process = 0) {
  const SamplerEngine::Sampling sampling(e);
  PendingWeight w = e.take_pending();
  e.frames().assign(stack.begin(), stack.end());
  e.lines().assign(stack.size(), 0);
  if (w.ticks) sampling.record(SampleKind::Time, w.ticks, process);
  if (w.bytes) sampling.record(SampleKind::Space, w.bytes, process);
}

struct Run {
  FakeAdapter adapter;
  SamplerEngine engine{&adapter};
  FunctionId main_fn, a, b;
  Run() {
    main_fn = engine.add_function({"main", "demo.fake", 1});
    a = engine.add_function({"a", "demo.fake", 10});
    b = engine.add_function({"b", "demo.fake", 20});
  }
  void start(RunSettings s = quiet(), bool counting = false) {
    std::string error;
    REQUIRE(engine.start(s, counting, &error));
    REQUIRE(engine.resume(&error, false));
  }
};

}  // namespace

TEST_CASE("engine: a run's state machine is Allegro's profiler-status") {
  Run r;
  CHECK(r.engine.status() == RunStatus::Inactive);
  RunSettings s = quiet();
  s.start_sampling = false;
  std::string error;
  REQUIRE(r.engine.start(s, false, &error));
  CHECK(r.engine.status() == RunStatus::Suspended);
  CHECK_FALSE(r.engine.start(s, false, &error));
  CHECK(error == "the profiler is already active");
  REQUIRE(r.engine.resume(&error, false));
  CHECK(r.engine.status() == RunStatus::Sampling);
  r.engine.suspend();
  CHECK(r.engine.status() == RunStatus::Suspended);
  r.engine.stop();
  CHECK(r.engine.status() == RunStatus::Saved);
  CHECK_FALSE(r.engine.resume(&error, false));
  CHECK(error == "the profiler is not started");
  r.engine.mark_analyzed();
  CHECK(r.engine.status() == RunStatus::Analyzed);
  r.engine.reset();
  CHECK(r.engine.status() == RunStatus::Inactive);
}

TEST_CASE("engine: ticks arm the adapter and the sample carries them all as its weight") {
  Run r;
  r.start();
  r.engine.on_tick(3, 0, 1000);
  CHECK(r.adapter.arms == 1);
  CHECK(r.engine.pending_ticks() == 3);
  r.adapter.answer = ArmResult::AlreadyArmed;  // the safe point has not come yet
  r.engine.on_tick(2, 0, 2000);
  CHECK(r.engine.pending_ticks() == 5);
  safe_point(r.engine, {r.main_fn, r.a, r.a, r.b});  // a recursion: a counts once
  r.engine.stop();
  const Profile& p = r.engine.profile();
  CHECK(p.sample_count() == 5);
  CHECK(p.health.samples_taken == 1);
  CHECK(p.health.ticks_merged == 2);
  CHECK(p.counts(r.b).self == 5);
  CHECK(p.counts(r.a).cumulative == 5);
  CHECK(p.counts(r.main_fn).cumulative == 5);
  CHECK(p.counts(r.a).self == 0);
}

TEST_CASE("engine: ticks that no safe point took go to the last stack at suspend - or are dropped") {
  Run r;
  r.start();
  r.engine.on_tick(3, 2, 1000);  // 2 of them due while the thread was blocked
  r.engine.suspend();  // no sample yet: the time blocked is kept as such, the rest has no stack
  CHECK(r.engine.profile().health.dropped == 1);
  CHECK(r.engine.profile().sample_weight() == 2);
  CHECK(r.engine.profile().health.off_cpu == 2);
  CHECK(r.engine.profile().health.samples_taken == 0);  // no stack was walked for them
  CHECK(r.adapter.disarms == 1);  // the arm is taken back at suspend
  std::string error;
  REQUIRE(r.engine.resume(&error, false));
  r.engine.on_tick(1, 0, 1000);
  safe_point(r.engine, {r.main_fn, r.a});
  r.adapter.answer = ArmResult::NotNow;  // e.g. a hook of the program's is running
  r.engine.on_tick(4, 0, 2000);
  r.engine.stop();
  const Profile& p = r.engine.profile();
  CHECK(p.counts(r.a).self == 5);  // 1 sampled + 4 left over, on the last stack
  CHECK(p.health.samples_taken == 1);
}

// The function "(blocked)" stands under (kNoFunction: the process's root, or none).
FunctionId blocked_parent(const Profile& p) {
  const FunctionId blocked = test::function_named(p, "(blocked)");
  for (NodeId n = 0; n < p.tree.size(); ++n)
    if (p.tree.node(n).function == blocked && p.tree.node(n).depth > 1) return p.tree.node(p.tree.node(n).parent).function;
  return kNoFunction;
}

// A sample armed while the thread was blocked (arm_blocked) is the stack that blocked.
TEST_CASE("engine: a block's ticks sit under (blocked) in the stack that blocked when armed in the block") {
  Run r;
  r.adapter.blocked_answer = ArmResult::Armed;
  r.start();
  r.engine.on_blocked_tick(2, 2, 1000);  // the timer's thread: 2 ticks due while blocked, armed
  r.adapter.blocked_answer = ArmResult::AlreadyArmed;
  r.engine.on_blocked_tick(1, 1, 2000);  // a later look: the arm still waits, and still counts
  r.engine.on_tick(1, 0, 3000);          // and a tick once it runs
  safe_point(r.engine, {r.main_fn, r.a});
  const Profile& p = r.engine.profile();
  CHECK(p.health.off_cpu == 3);
  CHECK(p.counts(test::function_named(p, "(blocked)")).self == 3);
  CHECK(blocked_parent(p) == r.a);
  CHECK(p.counts(r.a).self == 1);
  CHECK(p.counts(r.a).cumulative == 4);
  r.engine.stop();
}

// A tick's arm that still waits when the thread is found blocked was made after the last safe
// point and before the block (the thread blocked in the microseconds after it): the first safe
// point after the wake samples the stack that blocked, as an arm made in the block would.
TEST_CASE("engine: a block's ticks sit under the stack that blocked when a tick's arm still waits") {
  Run r;
  r.adapter.blocked_answer = ArmResult::AlreadyArmed;
  r.start();
  r.engine.on_tick(1, 0, 1000);          // armed by the signal, just before the thread blocked
  r.engine.on_blocked_tick(2, 2, 2000);  // the timer's thread finds it blocked, the arm waiting
  safe_point(r.engine, {r.main_fn, r.a});
  const Profile& p = r.engine.profile();
  CHECK(p.health.off_cpu == 2);
  CHECK(p.counts(test::function_named(p, "(blocked)")).self == 2);
  CHECK(blocked_parent(p) == r.a);
  CHECK(test::self_at_root(p, test::function_named(p, "(blocked)")) == 0);
  CHECK(p.counts(r.a).self == 1);
  CHECK(p.counts(r.a).cumulative == 3);
  r.engine.stop();
}

// Any other sample comes after the thread ran on from its wake: the stack it blocked in is not
// known, and its ticks are nobody's code. They stand under (blocked) at the root.
TEST_CASE("engine: a block's ticks sit under (blocked) at the root when not armed in the block") {
  for (ArmResult blocked : {ArmResult::NotNow, ArmResult::Armed}) {
    Run r;
    r.start();
    if (blocked == ArmResult::Armed) {
      // An earlier block's arm was taken by its own sample: it says nothing of this one.
      r.adapter.blocked_answer = ArmResult::Armed;
      r.engine.on_blocked_tick(1, 1, 500);
      safe_point(r.engine, {r.main_fn, r.b});
    }
    r.engine.on_tick(3, 2, 1000);  // 3 ticks, 2 of them due while the thread was blocked
    safe_point(r.engine, {r.main_fn, r.a});
    const Profile& p = r.engine.profile();
    const FunctionId blocked_fn = test::function_named(p, "(blocked)");
    CHECK(p.counts(r.a).self == 1);
    CHECK(p.counts(r.a).cumulative == 1);
    CHECK(p.counts(blocked_fn).self == (blocked == ArmResult::Armed ? 3u : 2u));
    CHECK(p.health.off_cpu == p.counts(blocked_fn).self);
    CHECK(test::self_at_root(p, blocked_fn) == 2);
    r.engine.stop();
  }
}

TEST_CASE("engine: max_samples stops the profile it was reached in - the others go on") {
  Run r;
  r.adapter.caps.gc_events = true;
  RunSettings s = quiet();
  s.max_samples = 2;
  s.gc_samples = true;
  r.start(s);
  r.engine.lines().clear();
  {
    const SamplerEngine::Sampling sampling(r.engine);
    for (int i = 0; i < 2; ++i) {
      r.engine.frames() = {r.main_fn, r.a};
      sampling.record(SampleKind::Gc, 1, 0);
    }
  }
  CHECK(r.engine.profile(SampleKind::Gc).health.limit_reached);
  CHECK_FALSE(r.engine.profile(SampleKind::Time).health.limit_reached);
  CHECK_FALSE(r.engine.finish_limit());  // time is still collected: the run goes on
  {
    const SamplerEngine::Sampling sampling(r.engine);
    r.engine.frames() = {r.main_fn, r.b};
    CHECK(sampling.record(SampleKind::Time, 1, 0) != kNoNode);
    r.engine.frames() = {r.main_fn, r.b};
    CHECK(sampling.record(SampleKind::Gc, 1, 0) == kNoNode);  // the gc profile took no more
    CHECK(r.engine.profile(SampleKind::Gc).sample_weight() == 2);
    r.engine.frames() = {r.main_fn, r.b};
    sampling.record(SampleKind::Time, 1, 0);
  }
  CHECK(r.engine.finish_limit());  // now every profile of the run is at its limit
  r.engine.stop();
}

TEST_CASE("engine: refuses what the runtime cannot do, naming the runtime") {
  Run r;
  std::string error;
  RunSettings s = quiet();
  s.count_calls = true;
  CHECK_FALSE(r.engine.start(s, true, &error));
  CHECK(error == "Fake 1.0 has no call events: calls cannot be counted");
  s = quiet();
  s.alloc_bytes = 1024;
  CHECK_FALSE(r.engine.start(s, false, &error));
  CHECK(error == "Fake 1.0 reports no allocations: no space profile");
  s = quiet();
  s.gc_samples = true;
  CHECK_FALSE(r.engine.start(s, false, &error));
  CHECK(error == "Fake 1.0 reports no GC cycles: no gc samples");
  CHECK(r.engine.status() == RunStatus::Inactive);
  r.adapter.caps.call_events = true;
  s = quiet();
  s.count_calls = true;
  CHECK(r.engine.start(s, true, &error));
}

TEST_CASE("engine: max_samples stops collection once, and resume then says why") {
  Run r;
  RunSettings s = quiet();
  s.max_samples = 2;
  r.start(s);
  r.engine.on_tick(1, 0, 1000);
  safe_point(r.engine, {r.main_fn});
  CHECK_FALSE(r.engine.finish_limit());
  r.engine.on_tick(1, 0, 2000);
  safe_point(r.engine, {r.main_fn, r.a});
  CHECK(r.engine.finish_limit());   // the caller warns the program once
  CHECK_FALSE(r.engine.finish_limit());
  CHECK(r.engine.status() == RunStatus::Suspended);
  CHECK(r.engine.profile().health.limit_reached);
  std::string error;
  CHECK_FALSE(r.engine.resume(&error, false));
  CHECK(error == "max_samples (2) was reached");
}

TEST_CASE("engine: processes keep their own call trees") {
  Run r;
  r.start();
  r.engine.on_tick(2, 0, 1000);
  safe_point(r.engine, {r.main_fn, r.a}, 0);
  r.engine.on_tick(3, 0, 2000);
  safe_point(r.engine, {r.b}, 7);  // a coroutine, context or fiber numbered 7
  r.engine.stop();
  const Profile& p = r.engine.profile();
  CHECK(p.sample_count() == 5);
  CHECK(p.tree.roots().size() == 2);
  CHECK(check_invariants(p).empty());
}

TEST_CASE("engine: a named process is named in every profile, and again after a reset") {
  Run r;
  for (int round = 0; round < 2; ++round) {
    r.engine.reset();
    r.start();
    for (int i = 0; i < 3; ++i) r.engine.name_process(7, "worker 7", 4242);  // once per sample
    r.engine.stop();
    for (SampleKind k : {SampleKind::Time, SampleKind::Gc, SampleKind::Space}) {
      int named = 0;
      for (const auto& t : r.engine.profile(k).threads) {
        if (t.id != 7) continue;
        ++named;
        CHECK(t.name == "worker 7");
        CHECK(t.os_thread == 4242);
      }
      CHECK(named == 1);
    }
  }
}

TEST_CASE("process chain: a resumed process runs on its resumer, and a missed switch starts over") {
  int a, b, c, d;
  ProcessChain chain;
  CHECK(chain.running() == nullptr);
  chain.run(&a);
  chain.enter(&a, &b);
  chain.enter(&b, &c);
  REQUIRE(chain.size() == 3);
  CHECK(chain.running() == &c);
  CHECK(chain.index_of(&a) == 0);
  CHECK(chain.index_of(&c) == 2);
  CHECK(chain.index_of(&d) == ProcessChain::kNotInChain);
  chain.leave(&c, &b);  // c yields to b
  CHECK(chain.size() == 2);
  CHECK(chain.running() == &b);
  chain.enter(&d, &c);  // resumed by d, which the adapter never saw run: d is the new root
  CHECK(chain.size() == 2);
  CHECK(chain.at(0) == &d);
  chain.leave(&c, &a);  // c returns to a process not below it: a runs, alone
  CHECK(chain.size() == 1);
  CHECK(chain.running() == &a);
  chain.run(&a);  // already running: unchanged
  CHECK(chain.size() == 1);
}

TEST_CASE("process chain: a fiber switch keeps each fiber's chain") {
  int a, b, x;
  ProcessChain chain;
  std::vector<void*> fiber1, fiber2;
  chain.run(&a);
  chain.enter(&a, &b);
  chain.swap_out(&fiber1);
  CHECK(chain.size() == 0);
  chain.swap_in(fiber2, &x);  // first time: the fiber's own process alone
  CHECK(chain.running() == &x);
  chain.swap_out(&fiber2);
  chain.swap_in(fiber1, &x);
  REQUIRE(chain.size() == 2);
  CHECK(chain.at(0) == &a);
  CHECK(chain.running() == &b);
  chain.swap_out(&fiber1);
  chain.swap_in({}, nullptr);  // a fiber that runs no process of this adapter
  CHECK(chain.running() == nullptr);
}

TEST_CASE("engine: an excluded process collects nothing, and its time is not the profile's") {
  Run r;
  r.start();
  r.engine.set_current_excluded(true);
  r.engine.on_tick(4, 0, 1000);
  CHECK(r.engine.pending_ticks() == 0);
  CHECK(r.adapter.arms == 0);
  r.engine.set_current_excluded(false);
  r.engine.on_tick(1, 0, 2000);
  safe_point(r.engine, {r.main_fn});
  r.engine.stop();
  CHECK(r.engine.profile().health.excluded == 4);
  CHECK(r.engine.profile().sample_count() == 1);
}

TEST_CASE("engine: ticks dropped for want of room are counted, not sampled") {
  Run r;
  r.start();
  r.engine.on_tick(3, 0, 1000);
  {
    SamplerEngine::ArmMove move(r.engine);
    move.context().drop_pending();  // the adapter found no safe way to sample
  }
  r.engine.stop();
  CHECK(r.engine.profile().health.no_room == 3);
  CHECK(r.engine.profile().sample_count() == 0);
}

TEST_CASE("engine: a polling runtime is never armed from the signal: it reads pending ticks") {
  Run r;
  r.adapter.caps.signal_arm = false;
  r.start();
  r.engine.on_tick(2, 0, 1000);
  CHECK(r.adapter.arms == 0);
  CHECK(r.engine.pending_ticks() == 2);
  safe_point(r.engine, {r.main_fn, r.b});
  r.engine.stop();
  CHECK(r.engine.profile().counts(r.b).self == 2);
}

TEST_CASE("engine: exact calls go into every profile of the run, allocation bytes into space") {
  Run r;
  r.adapter.caps.call_events = r.adapter.caps.alloc_events = true;
  RunSettings s = quiet();
  s.count_calls = true;
  s.alloc_bytes = 1;  // every byte: a sample is due at once
  r.start(s, true);
  r.engine.record_call(r.a, r.main_fn);
  r.engine.record_call(r.a, r.main_fn);
  CHECK(r.engine.on_alloc(100));  // due: the adapter would arm
  safe_point(r.engine, {r.main_fn, r.a});
  r.engine.stop();
  CHECK(r.engine.profile(SampleKind::Time).counts(r.a).calls == 2u);
  CHECK(r.engine.profile(SampleKind::Space).counts(r.a).calls == 2u);
  const Profile& space = r.engine.profile(SampleKind::Space);
  CHECK(space.sample_count() == 1);  // one sample, weighing the bytes up to its sample point
  CHECK(space.counts(r.a).self > 0);
  CHECK(space.counts(r.a).self <= 100);
}

TEST_CASE("engine: calls of pairs in turn stay exact through the runs, reads and suspends") {
  Run r;
  r.adapter.caps.call_events = true;
  RunSettings s = quiet();
  s.count_calls = true;
  r.start(s, true);
  // Sixteen callers of a and b: more pairs than the engine keeps runs for, so slots are taken over.
  std::vector<FunctionId> callers;
  for (int i = 0; i < 16; ++i) callers.push_back(r.engine.add_function({"c" + std::to_string(i), "demo.fake", 100 + i}));
  std::uint64_t a_from_c0 = 0;
  for (int round = 0; round < 50; ++round) {
    for (FunctionId c : callers) {
      r.engine.record_call(r.a, c);
      r.engine.record_call(r.b, c);
      r.engine.record_call(r.a, c);
    }
    a_from_c0 += 2;
    if (round == 20) CHECK(r.engine.profile().counts(r.a).calls == 21u * 32u);  // a read flushes every run
    if (round == 30) {
      r.engine.suspend();
      std::string error;
      REQUIRE(r.engine.resume(&error, false));
    }
  }
  r.engine.stop();
  const Profile& p = r.engine.profile();
  CHECK(p.counts(r.a).calls == 50u * 32u);
  CHECK(p.counts(r.b).calls == 50u * 16u);
  std::uint64_t from_c0 = 0;
  for (const auto& [caller, n] : p.callers(r.a))
    if (caller == callers[0]) from_c0 = n;
  CHECK(from_c0 == a_from_c0);
}

TEST_CASE("engine: gc and space profiles hold functions only while collected, under the time profile's ids") {
  Run r;
  r.adapter.caps.alloc_events = true;
  r.start();  // time only
  const FunctionId c = r.engine.add_function({"c", "demo.fake", 30});
  r.engine.stop();
  CHECK(r.engine.profile(SampleKind::Time).functions.size() == 4);
  CHECK(r.engine.profile(SampleKind::Space).functions.size() == 0);
  CHECK(r.engine.profile(SampleKind::Gc).functions.size() == 0);
  r.engine.rename_function(c, "c2");  // a rename reaches the profiles that hold the function

  RunSettings s = quiet();
  s.alloc_bytes = 1;
  r.start(s);  // time and space: space catches up, then takes new functions with the same ids
  const FunctionId d = r.engine.add_function({"d", "demo.fake", 40});
  CHECK(r.engine.on_alloc(64));
  safe_point(r.engine, {r.main_fn, c, d});
  r.engine.stop();
  const Profile& space = r.engine.profile(SampleKind::Space);
  REQUIRE(space.functions.size() == 5);
  for (FunctionId id : {r.main_fn, r.a, r.b, c, d})
    CHECK(space.functions.label(id) == r.engine.profile(SampleKind::Time).functions.label(id));
  CHECK(space.functions.info(c).name == "c2");
  CHECK(space.counts(d).self > 0);
  CHECK(r.engine.profile(SampleKind::Gc).functions.size() == 0);
}
