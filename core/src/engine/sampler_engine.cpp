#include "scriptprof/sampler_engine.hpp"

#include <algorithm>
#include <ctime>

namespace scriptprof {

namespace {

// Signal context: forwards the timer's tick to its engine (see on_tick for why it is safe).
void tick_trampoline(void* context, std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns) {
  static_cast<SamplerEngine*>(context)->on_tick(ticks, off_cpu, program_ns);
}

// The timer's thread: the ticks of a blocked thread (see Capabilities::blocked_arm).
void blocked_tick_trampoline(void* context, std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns) {
  static_cast<SamplerEngine*>(context)->on_blocked_tick(ticks, off_cpu, program_ns);
}

void fresh_profiles(std::shared_ptr<Profile> (&profiles)[3]) {
  for (auto& p : profiles) p = std::make_shared<Profile>();
  profiles[static_cast<int>(SampleKind::Space)]->clock = ClockKind::Alloc;
  profiles[static_cast<int>(SampleKind::Gc)]->clock = ClockKind::Gc;
}

}  // namespace

SamplerEngine::SamplerEngine(RuntimeAdapter* adapter) : adapter_(adapter) {
  fresh_profiles(profiles_);
  frames_.reserve(256);
}

// ---- Run state ------------------------------------------------------------------------------

std::string SamplerEngine::refusal(const RunSettings& s) const {
  const Capabilities c = adapter_->capabilities();
  std::string runtime = c.runtime;
  if (s.count_calls && !c.call_events) return runtime + " has no call events: calls cannot be counted";
  if (s.alloc_bytes && !c.alloc_events) return runtime + " reports no allocations: no space profile";
  if (s.gc_samples && !c.gc_events) return runtime + " reports no GC cycles: no gc samples";
  if (s.heap && !s.served) return "heap: the in-use heap is served only (profiler.serve, --serve)";
  if (s.heap && !(c.alloc_events && c.free_events && c.gc_events))
    return runtime + " does not report every free on its thread: no in-use heap";
  return {};
}

bool SamplerEngine::start(const RunSettings& settings, bool counting, std::string* error, bool listed_only) {
  if (active_) {
    if (error) *error = "the profiler is already active";
    return false;
  }
  if (std::string why = refusal(settings); !why.empty()) {
    if (error) *error = why;
    return false;
  }
  settings_ = settings;
  counting_ = counting;
  call_runs_ = {};  // (suspend gave the last run's calls to its profiles)
  const Capabilities caps = adapter_->capabilities();
  // The heap's blocks are the space profile's samples: its interval, unless the run gave one.
  // (refusal() checked the heap is served and possible.)
  if (settings.heap && !settings_.alloc_bytes) settings_.alloc_bytes = settings.heap_bytes;
  heap_.reset(settings.heap ? settings_.alloc_bytes : 0);
  heap_cycles_ = 0;
  arm_ = &adapter_->tick_arm();
  for (auto& p : profiles_) p->gc_measured = caps.gc_time;
  signal_arm_ = caps.signal_arm || caps.thread_arm;
  arm_on_thread_ = caps.thread_arm;
  blocked_arm_ = caps.signal_arm && caps.blocked_arm && !caps.thread_arm;
  primary_ = settings.sample_time || !(settings.gc_samples || settings_.alloc_bytes) ? SampleKind::Time
             : settings.gc_samples ? SampleKind::Gc : SampleKind::Space;
  kind_enabled_[0] = primary_ == SampleKind::Time;
  kind_enabled_[1] = settings.gc_samples;
  kind_enabled_[2] = settings_.alloc_bytes > 0;
  for (int k = 1; k < 3; ++k)
    if (kind_enabled_[k]) sync_functions(*profiles_[k]);
  const std::uint64_t now_unix_ns = clock_ns(CLOCK_REALTIME);
  for (int k = 0; k < 3; ++k) {
    Profile& p = *profiles_[k];
    if (k != static_cast<int>(SampleKind::Space)) {
      p.period_ns = settings.period_ns;
      // The gc profile counts collections whatever the timer's clock.
      if (k == static_cast<int>(SampleKind::Time))
        p.clock = settings.clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall;
    } else {
      p.period_ns = settings_.alloc_bytes;
    }
    p.keep_samples = settings.full_stacks;
    if (counting_) p.enable_call_counts(!listed_only);
    if (p.threads.empty()) p.add_thread(0, "main");
    if (p.start_unix_ns == 0) p.start_unix_ns = now_unix_ns;
  }
  countdown_ = AllocationCountdown(settings_.alloc_bytes, clock_ns(CLOCK_MONOTONIC) ^ reinterpret_cast<std::uintptr_t>(this));
  pending_bytes_ = 0;
  pending_gc_ = 0;
  active_ = true;
  ran_ = true;
  analyzed_ = false;
  limit_hit_ = false;
  budget_.start();  // a fresh run: one-off costs of its first samples come out of the allowance
  return true;
}

bool SamplerEngine::resume(std::string* error, bool hold_clock) {
  if (!active_) {
    if (error) *error = "the profiler is not started";
    return false;
  }
  if (sampling_) return true;
  if (every_limit_reached()) {
    if (error) *error = "max_samples (" + std::to_string(settings_.max_samples) + ") was reached";
    return false;
  }
  pending_ = 0;
  handed_over_ = false;
  armed_in_block_ = false;
  next_arm_ns_ = 0;
  budget_.rebase();  // the timer restarts program time from 0
  TimerSettings ts{settings_.clock, settings_.period_ns, hold_clock, arm_on_thread_, settings_.signal,
                   blocked_arm_ ? blocked_tick_trampoline : nullptr, settings_.ticks_paused};
  // The timer also measures program time, so it runs even when only gc or space is sampled.
  if (!timer_.start(ts, tick_trampoline, this, error)) return false;
  sampling_ = true;
  update_calls_now();
  return true;
}

void SamplerEngine::suspend() {
  flush_calls();
  if (!sampling_) return;
  pending_ += timer_.stop();  // no tick runs after this; ticks completed but undelivered count
  pending_off_cpu_ += timer_.take_off_cpu();  // of those, due while the thread was blocked
  handed_over_ = false;  // no wake comes in this run: stop() crossed the rest
  armed_in_block_ = false;
  {
    ArmMove move(*this);
    arm_->disarm(move.context());
  }
  sampling_ = false;
  update_calls_now();
  std::uint64_t run_ns = timer_.program_ns();
  Profile& time = *profiles_[0];
  // The host's ticks no sample took: "(host)" at the root.
  if (const HostTicks host = take_host_ticks(); host.ticks) {
    if (time.health.limit_reached || !settings_.sample_time) {
      time.health.dropped += host.ticks;
    } else {
      frames_.assign(1, host_function());
      lines_.clear();
      add_weight(time, SampleKind::Time, host.ticks, last_process_, host.since_ns);
      frames_.clear();
    }
  }
  // Ticks still waiting for a safe point (the end came first, the thread was blocked until
  // then, or sampling was over budget) go to the last stack sampled, the same approximation
  // the budget makes (their off-CPU part under "(blocked)"). With none sampled yet, the time
  // blocked is kept as "(blocked)" alone and the rest is dropped, and said so.
  if (std::uint64_t left = pending_.exchange(0)) {
    if (time.health.limit_reached || !settings_.sample_time) {
      time.health.dropped += left;
    } else {
      if (last_leaf_ == kNoNode) {
        const std::uint64_t off = std::min(left, pending_off_cpu_.load());
        time.health.dropped += left - off;
        left = off;
      }
      frames_ = last_leaf_ != kNoNode ? time.tree.stack(last_leaf_) : std::vector<FunctionId>{};
      lines_.clear();
      if (left) add_weight(time, SampleKind::Time, left, last_process_, elapsed_before_ns_ + run_ns);  // no stack walked
      frames_.clear();
    }
  }
  pending_off_cpu_ = 0;
  Profile& space = *profiles_[2];
  if (pending_bytes_ && last_space_leaf_ != kNoNode && !space.health.limit_reached) {
    std::vector<FunctionId> frames = space.tree.stack(last_space_leaf_);
    space.add_sample(last_process_, elapsed_before_ns_ + run_ns, pending_bytes_, frames.data(), frames.size());
  }
  pending_bytes_ = 0;
  pending_gc_ = 0;
  elapsed_before_ns_ += run_ns;
  // Time in excluded processes is not the profile's time (Allegro collects nothing there).
  std::uint64_t excluded = excluded_ticks_.exchange(0);
  double excluded_s = static_cast<double>(excluded) * static_cast<double>(settings_.period_ns) / 1e9;
  for (auto& p : profiles_) p->total_seconds += static_cast<double>(run_ns) / 1e9;
  time.total_seconds = std::max(0.0, time.total_seconds - excluded_s);
  // The run's time in GC, measured by the time samples; every profile of the run says it.
  double gc = time.collector_seconds();
  for (auto& p : profiles_) p->gc_seconds = gc;
  time.health.excluded += excluded;
  time.health.signals += timer_.signals();
  time.health.timer = timer_.delivery();
  if (std::uint64_t lost = timer_.handler_lost_ns(); lost && time.health.signal_lost_at < 0) {
    time.health.signal_lost_at = static_cast<double>(elapsed_before_ns_ - run_ns + lost) / 1e9;
    time.health.signal_name = timer_signal_name(timer_.signal_number());
  }
  time.health.ticks_merged += merged_.exchange(0);
  time.health.no_room += no_room_.exchange(0);
}

void SamplerEngine::stop() {
  if (!active_) return;
  suspend();
  active_ = false;
  heap_.reset(0);  // the adapter stops telling frees (tracks_heap() is false now): what is kept goes
}

void SamplerEngine::heap_cycle_ended() {
  if (!tracks_heap()) return;
  ++heap_cycles_;
  if (!live_ || !heap_.changed()) return;
  HeapSnapshot snapshot;
  snapshot.sample_bytes = heap_.mean_bytes();
  snapshot.cycles = heap_cycles_;
  const CallTree& tree = profiles_[static_cast<int>(SampleKind::Space)]->tree;
  for (const SampledHeap::Site& site : heap_.in_use()) {
    HeapSite out;
    out.process = site.process;
    out.frames = tree.stack(site.leaf);
    out.alloc_objects = site.alloc_objects;
    out.alloc_bytes = site.alloc_bytes;
    out.inuse_objects = site.inuse_objects;
    out.inuse_bytes = site.inuse_bytes;
    snapshot.sites.push_back(std::move(out));
  }
  live_->publish_heap(std::move(snapshot));
}

RunStatus SamplerEngine::status() const {
  if (active_) return sampling_ ? RunStatus::Sampling : RunStatus::Suspended;
  if (!ran_) return RunStatus::Inactive;
  return analyzed_ ? RunStatus::Analyzed : RunStatus::Saved;
}

double SamplerEngine::accumulated_seconds() const {
  return profiles_[0]->total_seconds + (sampling_ ? static_cast<double>(timer_.program_ns()) / 1e9 : 0.0);
}

std::uint64_t SamplerEngine::profile_time() const {
  return elapsed_before_ns_ + (sampling_ ? timer_.program_ns() : 0);
}

// ---- Profiles -------------------------------------------------------------------------------

void SamplerEngine::reset() {
  if (active_) return;
  fresh_profiles(profiles_);
  live_.reset();  // its reader knows the old ids
  named_processes_.clear();
  elapsed_before_ns_ = 0;
  last_leaf_ = last_space_leaf_ = kNoNode;
  blocked_id_ = host_id_ = kNoFunction;
  ran_ = analyzed_ = false;
  primary_ = SampleKind::Time;
}

void SamplerEngine::adopt(std::shared_ptr<Profile> profile) {
  reset();
  profiles_[0] = std::move(profile);
  ran_ = true;
}

// The time profile numbers every function; the gc and space profiles hold functions only while
// they are collected, and catch up on the ones they missed when they are (sync_functions). Three
// full tables were a third of a long run's memory.
FunctionId SamplerEngine::add_function(FunctionInfo info) {
  for (int k = 1; k < 3; ++k) {
    if (!kind_enabled_[k]) continue;
    sync_functions(*profiles_[k]);
    profiles_[k]->add_function(info);
  }
  if (live_) live_->define_function(static_cast<FunctionId>(profiles_[0]->functions.size()), info);
  return profiles_[0]->add_function(std::move(info));
}

void SamplerEngine::set_live_feed(std::shared_ptr<LiveFeed> feed) {
  live_ = std::move(feed);
  if (!live_) return;
  const Profile& time = *profiles_[0];
  for (FunctionId id = 0; id < time.functions.size(); ++id) live_->define_function(id, time.functions.info(id));
  for (const ThreadInfo& t : time.threads) live_->name_thread(t.id, t.name);
}

void SamplerEngine::feed_live(std::uint32_t process, const FunctionId* frames, std::size_t count,
                              std::uint64_t ticks) {
  const std::uint64_t period = timer_.period_ns();
  live_->add_sample(process, frames, count, ticks, period ? period : settings_.period_ns);
}

void SamplerEngine::sync_functions(Profile& p) const {
  const FunctionTable& all = profiles_[0]->functions;
  for (auto id = static_cast<FunctionId>(p.functions.size()); id < all.size(); ++id) p.add_function(all.info(id));
}

void SamplerEngine::name_process(std::uint32_t id, const std::string& name, std::uint32_t os_thread) {
  if (std::find(named_processes_.begin(), named_processes_.end(), id) != named_processes_.end()) return;
  named_processes_.push_back(id);
  for (auto& p : profiles_) p->add_thread(id, name, os_thread);
  if (live_) live_->name_thread(id, name);
}

void SamplerEngine::rename_function(FunctionId id, const std::string& name) {
  for (auto& p : profiles_)
    if (id < p->functions.size()) p->functions.rename(id, name);
  if (live_) live_->rename_function(id, name);
}

void SamplerEngine::flush_calls() const {
  for (CallRun& run : call_runs_)
    if (run.calls) flush_call_run(run);
}

void SamplerEngine::flush_call_run(CallRun& run) const {
  for (int k = 0; k < 3; ++k)
    if (kind_enabled_[k]) profiles_[k]->add_calls(run.callee, run.caller, run.calls);
  run.calls = 0;
}

// ---- Signal side ----------------------------------------------------------------------------
//
// Async-signal-safe: lock-free atomics, and the adapter's arm(), which its contract requires to
// be async-signal-safe when it declares signal_arm. It never allocates. The same path serves
// the timer's thread for a blocked thread's ticks (arm_blocked): atomics only, nothing of the
// profiled thread's but what the adapter's arm_blocked() declares safe to set from there.

void SamplerEngine::take_ticks(std::uint64_t ticks, std::uint64_t off_cpu, std::uint64_t program_ns, bool blocked) {
  if (!settings_.sample_time) return;  // the timer only measures time (gc or space runs)
  if (current_excluded_.load(std::memory_order_relaxed)) {
    excluded_ticks_.fetch_add(ticks, std::memory_order_relaxed);
    return;
  }
  if (off_cpu) pending_off_cpu_.fetch_add(off_cpu, std::memory_order_relaxed);
  if (ticks && pending_.fetch_add(ticks, std::memory_order_relaxed) == 0)
    first_pending_ns_.store(program_ns, std::memory_order_relaxed);
  if (blocked) handed_over_.store(true, std::memory_order_release);  // the rest at the wake (wake_tail)
  // Normal code, or the other of the signal side and the timer's thread, is moving the arm:
  // the ticks wait for the next tick.
  if (!(blocked ? claim_.try_timer() : claim_.try_signal())) return;
  arm_for_ticks(ticks, program_ns, blocked);
  claim_.release();
}

void SamplerEngine::arm_for_ticks(std::uint64_t ticks, std::uint64_t program_ns, bool blocked) {
  if (program_ns < next_arm_ns_.load(std::memory_order_relaxed)) {
    merged_.fetch_add(ticks, std::memory_order_relaxed);  // over budget: carried as weight
    return;
  }
  if (!signal_arm_) return;  // the runtime polls pending_ticks()
  // Before the arm: the thread may wake and take its sample before arm_blocked() returns. An
  // arm that did not take leaves the flag as it was (an earlier look's arm still waits). An arm
  // still waiting from a tick before the block (AlreadyArmed) samples the stack that blocked as
  // well: no safe point came between that arm and the block, so the first one after the wake
  // takes it. A wake armed with no tick (the CPU clock's, see hand_over_blocked) charges no
  // time blocked: it leaves the flag alone.
  const bool probe = blocked && ticks == 0;
  const bool was_armed_in_block = blocked && !probe && armed_in_block_.exchange(true, std::memory_order_acq_rel);
  const ArmContext tick(*this);  // the claim is held: this is the tick's arm
  const ArmResult result = blocked ? arm_->arm_blocked(tick) : arm_->arm(tick);
  if (blocked && !probe && result != ArmResult::Armed && result != ArmResult::AlreadyArmed && !was_armed_in_block) {
    bool set = true;  // unless a sample took it meanwhile
    armed_in_block_.compare_exchange_strong(set, false, std::memory_order_acq_rel);
  }
  switch (result) {
    case ArmResult::Armed:
    case ArmResult::Elsewhere:
      break;
    case ArmResult::Outside: {
      // The host's time, not the next script code's: kept apart from the ticks waiting for a
      // safe point (this thread's normal code cannot be taking those: no runtime code runs).
      const std::uint64_t moved = std::min(ticks, pending_.load(std::memory_order_relaxed));
      pending_.fetch_sub(moved, std::memory_order_relaxed);
      if (moved && host_ticks_.fetch_add(moved, std::memory_order_relaxed) == 0)
        first_host_ns_.store(program_ns, std::memory_order_relaxed);
      break;
    }
    case ArmResult::AlreadyArmed:
      merged_.fetch_add(ticks, std::memory_order_relaxed);
      break;
    case ArmResult::NotNow:
      if (pending_.load(std::memory_order_relaxed) > 0) merged_.fetch_add(ticks, std::memory_order_relaxed);
      break;
  }
}

// Signal context, or normal context inside the critical section.
void SamplerEngine::drop_pending() {
  no_room_.fetch_add(pending_.exchange(0, std::memory_order_acq_rel), std::memory_order_relaxed);
}

// ---- Safe point -----------------------------------------------------------------------------

void SamplerEngine::leave_sampling() {
  std::uint64_t at = timer_.program_ns();  // frozen at enter_sampling
  std::uint64_t cost = timer_.leave_profiler();
  next_arm_ns_.store(budget_.spend(at, cost), std::memory_order_relaxed);
}

bool SamplerEngine::over_budget() const {
  return timer_.program_ns() < next_arm_ns_.load(std::memory_order_relaxed);
}

// At a sample, on the profiled thread: the first after a blocked hand-over is the thread's
// wake. The ticks due since the watcher's last look are its too (see cross_at_wake).
std::uint64_t SamplerEngine::wake_tail() {
  if (!handed_over_.exchange(false, std::memory_order_acquire)) return 0;
  std::uint64_t off_cpu = 0;
  const std::uint64_t ticks = timer_.cross_at_wake(&off_cpu);
  pending_off_cpu_.fetch_add(off_cpu, std::memory_order_relaxed);
  return ticks;
}

SamplerEngine::HostTicks SamplerEngine::take_host_ticks() {
  HostTicks h;
  h.since_ns = elapsed_before_ns_ + first_host_ns_.load(std::memory_order_relaxed);  // profile time
  h.ticks = host_ticks_.exchange(0, std::memory_order_acq_rel);
  return h;
}

FunctionId SamplerEngine::host_function() {
  if (host_id_ == kNoFunction) host_id_ = add_function({"(host)", "", 0, 0, FunctionKind::Pseudo});
  return host_id_;
}

PendingWeight SamplerEngine::take_pending() {
  // Read before the exchange: a tick after it starts a new batch with its own oldest time.
  std::uint64_t since = pending_since_ns();
  const std::uint64_t tail = wake_tail();
  PendingWeight w{pending_.exchange(0, std::memory_order_acq_rel) + tail, pending_bytes_, since};
  pending_bytes_ = 0;
  return w;
}

NodeId SamplerEngine::record(SampleKind kind, std::uint64_t weight, std::uint32_t process) {
  return record(kind, weight, process, profile_time());
}

NodeId SamplerEngine::record(SampleKind kind, std::uint64_t weight, std::uint32_t process, std::uint64_t at_ns) {
  Profile& p = profile(kind);
  // max_samples is each profile's own: one at its limit takes no more, and the others go on.
  if (p.health.limit_reached) return kNoNode;
  NodeId leaf = add_weight(p, kind, weight, process, at_ns);
  if (++p.health.samples_taken >= settings_.max_samples && settings_.max_samples) {
    p.health.limit_reached = true;
    limit_hit_ = every_limit_reached();  // nothing left to collect: the run suspends
  }
  last_process_ = process;
  if (kind == SampleKind::Time) last_leaf_ = leaf;
  if (kind == SampleKind::Space) {
    last_space_leaf_ = leaf;
    if (tracks_heap() && leaf != kNoNode) heap_.site(leaf, process);  // the blocks this sample was armed for
  }
  return leaf;
}

NodeId SamplerEngine::add_weight(Profile& p, SampleKind kind, std::uint64_t weight, std::uint32_t process,
                                 std::uint64_t at_ns) {
  const int* lines = lines_.size() == frames_.size() ? lines_.data() : nullptr;
  // Ticks that fell due while the thread was blocked (the wall clock's) are time off the CPU:
  // they sit under a "(blocked)" leaf, so a reader tells waiting from running. A sample armed
  // while the thread was blocked is the stack that blocked; any other came after the thread
  // ran on from its wake (the adapter could not arm it while blocked: a hook of the program's,
  // counted calls), and the stack it blocked in is not known: then "(blocked)" stands at the
  // process's root. Frames sampled on both sides of the block cannot tell one that stayed from
  // one called again (a frame loop's sleep went under the next frame's first function).
  const bool armed_in_block = kind == SampleKind::Time && armed_in_block_.exchange(false, std::memory_order_acq_rel);
  std::uint64_t off_cpu = 0;
  if (kind == SampleKind::Time && pending_off_cpu_.load(std::memory_order_relaxed))
    off_cpu = std::min(weight, pending_off_cpu_.exchange(0, std::memory_order_relaxed));
  NodeId leaf = kNoNode;
  const bool live = live_ && kind == SampleKind::Time;
  if (weight > off_cpu) {
    leaf = p.add_sample(process, at_ns, weight - off_cpu, frames_.data(), frames_.size(), lines);
    if (live) feed_live(process, frames_.data(), frames_.size(), weight - off_cpu);
  }
  if (off_cpu) {
    p.health.off_cpu += off_cpu;
    if (blocked_id_ == kNoFunction) blocked_id_ = add_function({"(blocked)", "", 0, 0, FunctionKind::Pseudo});
    NodeId blocked;
    if (armed_in_block) {
      frames_.push_back(blocked_id_);
      if (lines) lines_.push_back(0);
      blocked = p.add_sample(process, at_ns, off_cpu, frames_.data(), frames_.size(), lines ? lines_.data() : nullptr);
      if (live) feed_live(process, frames_.data(), frames_.size(), off_cpu);
      frames_.pop_back();
      if (lines) lines_.pop_back();
    } else {
      const FunctionId alone[] = {blocked_id_};
      const int no_line[] = {0};
      blocked = p.add_sample(process, at_ns, off_cpu, alone, 1, lines ? no_line : nullptr);
      if (live) feed_live(process, alone, 1, off_cpu);
    }
    if (leaf == kNoNode) leaf = p.tree.node(blocked).parent;  // where it blocked, if known
  }
  return leaf;
}

bool SamplerEngine::finish_limit() {
  if (!limit_hit_) return false;
  limit_hit_ = false;
  suspend();
  return true;
}

bool SamplerEngine::every_limit_reached() const {
  for (int k = 0; k < 3; ++k)
    if (kind_enabled_[k] && !profiles_[k]->health.limit_reached) return false;
  return true;
}

// ---- Allocation and GC events ---------------------------------------------------------------

bool SamplerEngine::allocation_due(std::uint64_t weight, std::size_t bytes, std::uintptr_t block) {
  pending_bytes_ += weight;
  if (tracks_heap() && block) heap_.add(reinterpret_cast<const void*>(block), bytes);  // sited by the space sample this arms
  // Over the sampling budget the bytes wait for the next sample point, which carries them.
  return !over_budget();
}

std::uint64_t SamplerEngine::take_gc_cycles() {
  std::uint64_t n = pending_gc_;
  pending_gc_ = 0;
  return n;
}

}  // namespace scriptprof
