// The engine: everything about a profiling run that is the same for every interpreter.
//
// It owns the run's state machine (start, suspend, resume, stop), the timer and the ticks it
// counts, the sampling budget, health, max_samples, and the profiles by sample kind with their
// function identities and call counts. An adapter (runtimes/X) owns only what touches its
// interpreter: arming a sample at the next safe point, walking the stack, its hooks, allocator
// and GC. Data flows one way: timer -> engine.on_tick -> adapter.arm -> (safe point) adapter
// walks into frames() -> engine.record -> profile.
//
// Threading: one engine samples one OS thread. on_tick runs in signal context on that thread;
// everything else is normal context on it. The engine's signal-side state is lock-free atomics.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scriptprof/allocation_countdown.hpp"
#include "scriptprof/arm_claim.hpp"
#include "scriptprof/live_feed.hpp"
#include "scriptprof/profile.hpp"
#include "scriptprof/run_options.hpp"
#include "scriptprof/sampling_budget.hpp"
#include "scriptprof/sampled_heap.hpp"
#include "scriptprof/sampling_timer.hpp"

namespace scriptprof {

// The three profiles one run can fill at once.
enum class SampleKind : std::uint8_t { Time, Gc, Space };

// Allegro's profiler-status.
enum class RunStatus : std::uint8_t { Inactive, Suspended, Sampling, Saved, Analyzed };

// What a runtime can do; the engine refuses a run that needs more, naming the runtime.
struct Capabilities {
  const char* runtime = "runtime";
  bool signal_arm = false;    // arm() is async-signal-safe (else the runtime polls sample_due())
  bool call_events = false;   // call hooks: exact call counts
  bool alloc_events = false;  // its allocator reports bytes: space profiles
  bool gc_events = false;     // it reports GC cycles: gcprof
  // Its allocator reports every free of the program's blocks, and reallocs, on the thread
  // that runs it (with alloc_events and gc_events: the in-use heap).
  bool free_events = false;
  // A sample tells collector time from the program's (LuaJIT's VM state): the profile's
  // gc_seconds is the collector's time, not only explicit collections'.
  bool gc_time = false;
  // arm() may run on another thread beside the running program (and then also in the engine's
  // critical section's absence): ticks come from a timer thread, the program gets no signal.
  bool thread_arm = false;
  // arm_blocked() may run on the timer's thread while the profiled thread is blocked (a sleep,
  // a read): the ticks due meanwhile then reach the stack it blocked in, at its first safe point
  // after it wakes, where a signal would have cut its sleep short.
  bool blocked_arm = false;
};

// What arm() did with a tick.
enum class ArmResult : std::uint8_t {
  Armed,         // a sample will be taken at the next safe point
  AlreadyArmed,  // the arm set for an earlier tick is still waiting: this tick adds to its weight
  NotNow,        // cannot arm at this instant (a hook is running; or no room: the adapter
                 // dropped the ticks with drop_pending()); waiting ticks try again next tick
  Elsewhere,     // armed on another process, which samples when it runs again
  Outside,       // no code of the runtime runs (the host's own, between its calls in): the
                 // ticks are the host's time, charged as such at the next sample (take_host_ticks)
};

class SamplerEngine;

// Proof that the caller may move an arm: it runs in the timer's tick (the signal handler, or the
// timer's thread in a blocked hand-over), where the engine hands one to the adapter, or it holds
// a SamplerEngine::ArmMove, which gives one for its lifetime. Nothing else can make one, so an
// arm or a disarm from anywhere else does not compile. It is also the only way to the engine
// there: what it offers is async-signal-safe (atomics only).
class ArmContext {
 public:
  ArmContext(const ArmContext&) = delete;
  ArmContext& operator=(const ArmContext&) = delete;
  // Ticks waiting for a sample.
  std::uint64_t pending_ticks() const;
  // The waiting ticks are dropped: a sample could not be taken safely (health.no_room).
  void drop_pending() const;

 private:
  friend class SamplerEngine;
  explicit ArmContext(SamplerEngine& engine) : engine_(engine) {}
  SamplerEngine& engine_;
};

// The adapter's part that takes the ticks, in signal context or on the timer's thread. It is
// given an ArmContext and nothing else of the engine: an implementation holds no SamplerEngine,
// so a call of the interpreter thread's engine surface from a tick does not compile.
class TickArm {
 public:
  // The tick (signal context, only when capabilities().signal_arm; the timer's thread when
  // thread_arm), or an ArmMove: ask the running process for a sample at its next safe point.
  virtual ArmResult arm(const ArmContext& context) = 0;
  // An ArmMove: take back an arm that has not fired.
  virtual void disarm(const ArmContext& context) = 0;
  // The timer's thread, the profiled thread found blocked (only when capabilities().blocked_arm):
  // as arm(), for the first safe point after it wakes.
  virtual ArmResult arm_blocked(const ArmContext&) { return ArmResult::NotNow; }

 protected:
  ~TickArm() = default;
};

// The tick of a runtime that polls (no signal_arm, no thread_arm): nothing to arm.
class PollingArm final : public TickArm {
 public:
  ArmResult arm(const ArmContext&) override { return ArmResult::Elsewhere; }
  void disarm(const ArmContext&) override {}
};

// The adapter contract: what the engine asks of an interpreter. The engine's own surface is
// split the same way: SamplerEngine's public members are for the interpreter's thread (the
// adapter's normal code: run state, safe points, hooks), ArmContext's for a tick, and
// on_tick()/on_blocked_tick() for the timer.
class RuntimeAdapter {
 public:
  virtual ~RuntimeAdapter() = default;
  virtual Capabilities capabilities() const = 0;  // read when a run starts
  virtual TickArm& tick_arm() = 0;                // read when a run starts
};

// A sample's worth of pending weight, handed to the adapter at its safe point.
struct PendingWeight {
  std::uint64_t ticks = 0;
  std::uint64_t bytes = 0;
  std::uint64_t since_ns = 0;  // profile time of the oldest tick: the time-sample's stamp, so
                               // that the sample covers the span its ticks stand for
};

class SamplerEngine {
 public:
  explicit SamplerEngine(RuntimeAdapter* adapter);
  SamplerEngine(const SamplerEngine&) = delete;
  SamplerEngine& operator=(const SamplerEngine&) = delete;

  // ---- Run state (normal context) ----
  // Refuses what the runtime cannot do, naming it. Empty when the settings are possible.
  std::string refusal(const RunSettings& settings) const;
  // A new run adding to the current profiles; suspended until resume() unless
  // settings.start_sampling (then the caller resumes). False with a reason. With `listed_only`
  // (Allegro's count list) calls are counted for the functions the adapter marks with
  // mark_counted() only; every other function's count is unknown, never a made-up 0.
  bool start(const RunSettings& settings, bool counting, std::string* error, bool listed_only = false);
  // Starts or continues collection; fails once max_samples was reached.
  bool resume(std::string* error, bool hold_clock);
  // Suspends collection: the timer stops, ticks still waiting go to the last stack sampled.
  void suspend();
  // Ends the run (suspends first). The adapter removes its hooks after this.
  void stop();
  // The profiled code starts now, after a held start.
  void release_clock() { timer_.leave_profiler(); }
  // Time samples go to `feed` too (null: no more), with the names they use, from the
  // functions and processes known now on (a profile server reads it on its own thread).
  void set_live_feed(std::shared_ptr<LiveFeed> feed);
  // Any thread: ticks come every `period_ns` from now on (0: none) while the run samples; a
  // run started with RunSettings::ticks_paused has none until this gives a rate.
  void set_tick_period(std::uint64_t period_ns) { timer_.set_period(period_ns); }
  bool active() const { return active_; }
  bool sampling() const { return sampling_; }
  bool counting() const { return counting_; }
  // Calls are counted at this moment: a counting run, sampling, the current process included.
  // One byte for a call hook to test on every call.
  bool counting_calls_now() const { return calls_now_; }
  RunStatus status() const;
  void mark_analyzed() { analyzed_ = !active_ && ran_; }
  const RunSettings& settings() const { return settings_; }
  // Profiled seconds over every run since the last reset, the current one included.
  double accumulated_seconds() const;
  // Program time of the run so far, as samples carry it.
  std::uint64_t profile_time() const;

  // ---- Profiles ----
  // (Each gives the calls counted so far to the profiles first: see record_call.)
  Profile& profile() { return profile(primary_); }
  Profile& profile(SampleKind kind) {
    flush_calls();
    return *profiles_[static_cast<int>(kind)];
  }
  const Profile& profile(SampleKind kind) const {
    flush_calls();
    return *profiles_[static_cast<int>(kind)];
  }
  std::shared_ptr<Profile> shared_profile(SampleKind kind) {
    flush_calls();
    return profiles_[static_cast<int>(kind)];
  }
  SampleKind primary_kind() const { return primary_; }
  bool collects(SampleKind kind) const { return kind_enabled_[static_cast<int>(kind)]; }
  // The time sample just recorded (its leaf) ran JIT-compiled code or not, as the runtime's
  // VM state said: the profile's jit shares, and the live feed's.
  void add_jit_share(NodeId leaf, std::uint64_t weight, bool compiled) {
    profile(SampleKind::Time).add_jit_share(leaf, weight, compiled);
    if (live_) live_->mark_jit(compiled);
  }
  // A frame of `process` ends now (profiler.frame()): a mark in the time profile, or, while the
  // run is served, in the live feed (a server's run lasts for days: its marks are the feed's).
  void mark_frame(std::uint32_t process) {
    if (live_) live_->mark_frame(process);
    else profile(SampleKind::Time).frame_marks.push_back({process, profile_time()});
  }
  // Fresh profiles (not while active).
  void reset();
  // Makes `profile` (read from a file) the last run.
  void adopt(std::shared_ptr<Profile> profile);
  // A function, with one id in every profile that holds it: the time profile numbers every
  // function; the gc and space profiles take them while they are collected.
  FunctionId add_function(FunctionInfo info);
  void rename_function(FunctionId id, const std::string& name);
  // Names process `id` (a fiber, a context the host named) in every profile, once until the
  // next reset: cheap enough to call for every sample.
  void name_process(std::uint32_t id, const std::string& name, std::uint32_t os_thread);
  // `f`'s calls were counted this run (a listed function): 0 when it was never called.
  void mark_counted(FunctionId f) {
    for (auto& p : profiles_) p->mark_counted(f);
  }
  // An exact call of `callee` from `caller` (kNoFunction: unknown), into every profile of the
  // run. Calls of a pair are only counted here, an increment each, in a small direct-mapped
  // table of runs (a recursion, a loop calling a few functions in turn stay in it), and given
  // to the profiles when another pair takes the slot, a sample is recorded, a profile is read
  // or the run is suspended.
  void record_call(FunctionId callee, FunctionId caller) {
    if (callee == kNoFunction) return;  // nothing to count (and a fresh slot's pair)
    if (continue_call_run(callee, caller)) return;
    CallRun& run = call_runs_[call_run_slot(callee, caller)];
    if (run.calls) flush_call_run(run);
    run = {callee, caller, 1};
  }
  // record_call's common case alone, for a callee that is a function: true when the pair has
  // the slot (counted); false when record_call must give it the slot. A slot emptied by a
  // flush keeps its pair, so calls go on from 0.
  bool continue_call_run(FunctionId callee, FunctionId caller) {
    CallRun& run = call_runs_[call_run_slot(callee, caller)];
    if (run.callee != callee || run.caller != caller) return false;
    ++run.calls;
    return true;
  }

  // ---- Signal side ----
  // The timer's tick. Async-signal-safe: atomics, and adapter->arm().
  void on_tick(std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns) {
    take_ticks(ticks, off_cpu, program_ns, false);
  }
  // The timer's thread: ticks of the profiled thread while it is blocked (blocked_arm).
  void on_blocked_tick(std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns) {
    take_ticks(ticks, off_cpu, program_ns, true);
  }
  // Normal code moving an arm holds one of these for the move (sections nest): the signal side
  // and the timer's thread keep off meanwhile (arm_claim.hpp). The only way in, so an entry
  // cannot go without its exit.
  class ArmMove {
   public:
    explicit ArmMove(SamplerEngine& engine) : claim_(engine.claim_), was_(claim_.enter()), context_(engine) {}
    ~ArmMove() { claim_.leave(was_); }
    ArmMove(const ArmMove&) = delete;
    ArmMove& operator=(const ArmMove&) = delete;
    // What the adapter's arm and disarm calls ask for, while the move lasts.
    const ArmContext& context() const { return context_; }

   private:
    ArmClaim& claim_;
    const bool was_;
    const ArmContext context_;
  };
  // Ticks waiting for a sample (signal-safe read).
  std::uint64_t pending_ticks() const { return pending_.load(std::memory_order_relaxed); }
  // A blocked thread's wake was armed (with ticks or none): its first safe point calls
  // take_pending() even when nothing is pending, so that the ticks after the wake are aimed at.
  bool wake_armed() const { return handed_over_.load(std::memory_order_relaxed); }
  // Whether the current process is excluded from collection (Allegro's profile-process-p).
  void set_current_excluded(bool excluded) {
    current_excluded_.store(excluded, std::memory_order_relaxed);
    update_calls_now();
  }
  bool current_excluded() const { return current_excluded_.load(std::memory_order_relaxed); }
  // Ticks that belong to an excluded process (armed before the exclusion): not collected.
  void exclude_ticks(std::uint64_t ticks) { excluded_ticks_.fetch_add(ticks, std::memory_order_relaxed); }

  // ---- Safe point (normal context) ----
  // Brackets the adapter's sampling work at a safe point: not program time, and paid from the
  // budget. A sample is recorded through one, so none is recorded outside the bracket.
  class Sampling {
   public:
    explicit Sampling(SamplerEngine& engine) : engine_(engine) { engine_.timer_.enter_profiler(); }
    ~Sampling() { engine_.leave_sampling(); }
    Sampling(const Sampling&) = delete;
    Sampling& operator=(const Sampling&) = delete;
    // Records frames() as one sample of `kind` with `weight`, in `process`, stamped now (or at
    // `at_ns` of profile time). Returns its leaf, or kNoNode when that profile reached max_samples.
    NodeId record(SampleKind kind, std::uint64_t weight, std::uint32_t process) const {
      return engine_.record(kind, weight, process);
    }
    NodeId record(SampleKind kind, std::uint64_t weight, std::uint32_t process, std::uint64_t at_ns) const {
      return engine_.record(kind, weight, process, at_ns);
    }

   private:
    SamplerEngine& engine_;
  };
  bool over_budget() const;
  // Takes the weight waiting for this sample (ticks and allocation bytes), or the ticks only.
  PendingWeight take_pending();
  // The ticks that fell due while the host's own code ran (ArmResult::Outside) since the last
  // sample, and the profile time of the first: the adapter records them, before its own
  // sample, under host_function() or the zones the host had open.
  struct HostTicks {
    std::uint64_t ticks = 0;
    std::uint64_t since_ns = 0;
  };
  HostTicks take_host_ticks();
  std::uint64_t host_ticks() const { return host_ticks_.load(std::memory_order_relaxed); }
  // "(host)": the host's own code, made on first use.
  FunctionId host_function();
  std::uint64_t take_ticks() { return pending_.exchange(0, std::memory_order_acq_rel); }
  // The frame sink: the adapter fills frames() (and lines(), 0 = unknown) root first.
  std::vector<FunctionId>& frames() { return frames_; }
  std::vector<int>& lines() { return lines_; }
  // Profile time of the oldest tick still pending (a polling runtime stamps its sample there:
  // the stack it records is the one that tick saw).
  std::uint64_t pending_since_ns() const {
    return elapsed_before_ns_ + first_pending_ns_.load(std::memory_order_relaxed);
  }
  // max_samples was reached by a record(): suspend now and say so once (true: the caller
  // warns the program).
  bool finish_limit();
  // Every profile collected in this run reached max_samples.
  bool every_limit_reached() const;
  // Adds frames() with `weight` to `p`, the off-CPU ticks waiting under "(blocked)"; returns
  // the stack's leaf (no limit, no count of stacks taken: record() and suspend() do those).
  NodeId add_weight(Profile& p, SampleKind kind, std::uint64_t weight, std::uint32_t process, std::uint64_t at_ns);

  // ---- Allocation and GC events (normal context) ----
  // `bytes` allocated by the program: true when a sample is due and not over budget (the
  // adapter then arms). The weight waits in the pending bytes.
  // The early outs are inline: the allocator calls this for every allocation of the program.
  // `block`: the block made (or grown by `bytes`), kept until freed when the run tracks the heap.
  bool on_alloc(std::size_t bytes, const void* block = nullptr) {
    if (!settings_.alloc_bytes || !sampling_ || current_excluded()) return false;
    const std::uint64_t weight = countdown_.allocate(bytes);
    if (!weight) return false;
    // (As a number: the block is fresh memory, which the callee never reads.)
    return allocation_due(weight, bytes, reinterpret_cast<std::uintptr_t>(block));
  }
  // The in-use heap (a served run; see RunSettings::heap): the allocator tells every free of
  // the program's and every block a realloc moved, whatever the run's state. Inline: one test
  // when no block is kept.
  bool tracks_heap() const { return active_ && settings_.heap; }
  // The run needs the adapter to report GC cycles (its sentinel): gc samples, or the heap.
  bool needs_gc_cycles() const { return collects(SampleKind::Gc) || tracks_heap(); }
  void on_free(const void* block) { heap_.forget(block); }
  void on_move(const void* from, const void* to) { heap_.move(from, to); }
  // A GC cycle completed (the adapter's sentinel): the in-use heap as of now goes to the live feed.
  void heap_cycle_ended();
  std::uint64_t pending_bytes() const { return pending_bytes_; }
  // A GC cycle ended: its count waits for the next GC sample (the caller samples unless over
  // budget, then calls take_gc_cycles()).
  void add_gc_cycle() { ++pending_gc_; }
  std::uint64_t take_gc_cycles();

 private:
  void leave_sampling();  // the end of a Sampling
  NodeId record(SampleKind kind, std::uint64_t weight, std::uint32_t process);
  NodeId record(SampleKind kind, std::uint64_t weight, std::uint32_t process, std::uint64_t at_ns);
  bool allocation_due(std::uint64_t weight, std::size_t bytes, std::uintptr_t block);
  void take_ticks(std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns, bool blocked);
  void arm_for_ticks(std::uint64_t ticks, std::uint64_t program_ns, bool blocked);  // holding claim_
  std::uint64_t wake_tail();  // at a sample: the ticks of a blocked hand-over's last stretch
  friend class ArmContext;
  void drop_pending();  // signal-safe (ArmContext::drop_pending)

  RuntimeAdapter* adapter_;
  TickArm* arm_ = nullptr;  // the adapter's, read when a run starts
  bool signal_arm_ = false;  // the adapter's capability, read once per run (not per tick)
  bool arm_on_thread_ = false;  // ticks from a timer thread (capabilities().thread_arm)
  bool blocked_arm_ = false;    // capabilities().blocked_arm
  std::shared_ptr<Profile> profiles_[3];  // by SampleKind
  SampleKind primary_ = SampleKind::Time;
  bool kind_enabled_[3] = {true, false, false};
  RunSettings settings_;
  SamplingTimer timer_;
  SamplingBudget budget_;
  AllocationCountdown countdown_;
  bool active_ = false;      // between start and stop
  bool sampling_ = false;    // active and not suspended
  bool calls_now_ = false;   // counting_ && sampling_ && !current_excluded_
  void update_calls_now() { calls_now_ = counting_ && sampling_ && !current_excluded(); }
  bool counting_ = false;    // exact calls this run
  bool ran_ = false;         // a run happened since the last reset
  bool analyzed_ = false;
  bool limit_hit_ = false;   // max_samples reached, suspension pending
  std::uint64_t elapsed_before_ns_ = 0;  // program time of earlier start/stop pairs
  NodeId last_leaf_ = kNoNode;           // the last time sample's leaf (for leftover ticks)
  NodeId last_space_leaf_ = kNoNode;
  std::uint32_t last_process_ = 0;
  std::uint64_t pending_bytes_ = 0;
  std::uint64_t pending_gc_ = 0;
  SampledHeap heap_;  // the run's sampled blocks, when it tracks the heap
  std::uint64_t heap_cycles_ = 0;
  std::vector<std::uint32_t> named_processes_;  // name_process() done in these profiles
  std::vector<FunctionId> frames_;
  std::vector<int> lines_;
  // record_call's runs: calls of a (callee, caller) pair not yet in the profiles. A callee is
  // never kNoFunction, so a fresh slot matches no call.
  struct CallRun {
    FunctionId callee = kNoFunction, caller = kNoFunction;
    std::uint64_t calls = 0;
  };
  static constexpr std::size_t kCallRuns = 16;
  // Consecutive ids (functions met together) fall in different slots, for one caller or one callee.
  static std::size_t call_run_slot(FunctionId callee, FunctionId caller) {
    return (callee + caller * 9u) & (kCallRuns - 1);
  }
  void sync_functions(Profile& p) const;  // gives p the time profile's functions it lacks
  // A time sample's stack, as add_weight gave it to the profile, to the live feed.
  void feed_live(std::uint32_t process, const FunctionId* frames, std::size_t count, std::uint64_t ticks);
  std::shared_ptr<LiveFeed> live_;  // see set_live_feed
  void flush_calls() const;  // every run into the profiles
  void flush_call_run(CallRun& run) const;
  mutable std::array<CallRun, kCallRuns> call_runs_{};

  // Shared with the signal handler (lock-free atomics only).
  std::atomic<std::uint64_t> pending_{0};         // ticks not yet turned into a sample
  std::atomic<std::uint64_t> pending_off_cpu_{0}; // of those, due while the thread was blocked
  FunctionId blocked_id_ = kNoFunction;           // "(blocked)", made on first use
  FunctionId host_id_ = kNoFunction;              // "(host)", made on first use
  std::atomic<std::uint64_t> host_ticks_{0};      // due while the host's own code ran (Outside)
  std::atomic<std::uint64_t> first_host_ns_{0};   // the first of those, in program time
  std::atomic<std::uint64_t> first_pending_ns_{0};  // program time of the oldest of them
  std::atomic<bool> handed_over_{false};  // ticks of a blocked thread came since the last sample
  std::atomic<bool> armed_in_block_{false};  // arm_blocked armed: the next sample is the stack that blocked
  ArmClaim claim_;                                // who may move the arm now
  std::atomic<std::uint64_t> next_arm_ns_{0};     // program time before which arming waits
  std::atomic<std::uint64_t> merged_{0};          // ticks carried by a later sample
  std::atomic<std::uint64_t> no_room_{0};         // ticks dropped: no safe sample possible
  std::atomic<bool> current_excluded_{false};
  std::atomic<std::uint64_t> excluded_ticks_{0};
};

inline std::uint64_t ArmContext::pending_ticks() const { return engine_.pending_ticks(); }
inline void ArmContext::drop_pending() const { engine_.drop_pending(); }

}  // namespace scriptprof
