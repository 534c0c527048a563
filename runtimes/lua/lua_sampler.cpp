// The Lua adapter's run life cycle, signal path, safe point and sample assembly. Function
// identity, call counting and the sharing of hooks with the program have files of their own.
#include "lua_sampler.hpp"

#include "lua_frame_walk.hpp"
#include "lua_registry_keys.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <algorithm>
#include <cstring>
#include <ctime>

namespace scriptprof::lua {

namespace {

// Bumped whenever a sampler is made or destroyed, so a cached state -> sampler answer can
// never outlive either.
std::atomic<std::uint64_t> g_sampler_generation{1};

// The hook runs on every call when calls are counted: a per-thread one-entry cache of the
// registry lookup saves a third of that cost.
struct SamplerCache {
  lua_State* L = nullptr;
  LuaSampler* sampler = nullptr;
  std::uint64_t generation = 0;
};
thread_local SamplerCache t_sampler_cache;

}  // namespace

void sampler_hook(lua_State* L, lua_Debug* ar) {
  SamplerCache& c = t_sampler_cache;
  std::uint64_t generation = g_sampler_generation.load(std::memory_order_acquire);
  if (c.L != L || c.generation != generation) c = {L, LuaSampler::of(L), generation};
  LuaSampler* s = c.sampler;
  if (s)
    s->on_hook(L, ar);
  else
    lua_sethook(L, nullptr, 0, 0);  // the sampler is gone: leave no trace
}

namespace {

// Signal context: forwards to the sampler (see LuaSampler::on_tick for why it is safe).
void tick_trampoline(void* context, std::uint64_t ticks, std::uint64_t program_ns) {
  static_cast<LuaSampler*>(context)->on_tick(ticks, program_ns);
}

int event_mask(int event) {
  switch (event) {
    case LUA_HOOKCALL:
    case LUA_HOOKTAILCALL:
      return LUA_MASKCALL;
    case LUA_HOOKRET:
      return LUA_MASKRET;
    case LUA_HOOKLINE:
      return LUA_MASKLINE;
    default:
      return LUA_MASKCOUNT;
  }
}

}  // namespace

// ---- Life cycle ---------------------------------------------------------------------------

LuaSampler::LuaSampler(lua_State* main) : main_(main) {
  for (auto& p : profiles_) p = std::make_shared<Profile>();
  profiles_[static_cast<int>(SampleKind::Space)]->clock = ClockKind::Alloc;
  lua_pushlightuserdata(main, this);
  lua_rawsetp(main, LUA_REGISTRYINDEX, &kSamplerKey);
  frames_.reserve(256);
  g_sampler_generation.fetch_add(1, std::memory_order_acq_rel);
}

LuaSampler::~LuaSampler() {
  stop();
  for (auto [fn, context] : destroy_listeners_) fn(context);
  lua_pushnil(main_);
  lua_rawsetp(main_, LUA_REGISTRYINDEX, &kSamplerKey);
  g_sampler_generation.fetch_add(1, std::memory_order_acq_rel);
}

LuaSampler* LuaSampler::of(lua_State* L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kSamplerKey);
  auto* s = static_cast<LuaSampler*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return s;
}

void LuaSampler::reset() {
  if (active_) return;
  for (auto& p : profiles_) p = std::make_shared<Profile>();
  profiles_[static_cast<int>(SampleKind::Space)]->clock = ClockKind::Alloc;
  lua_ids_.clear();
  c_ids_.clear();
  chunks_.clear();
  chunk_index_.clear();
  fn_chunk_.clear();
  name_tries_.clear();
  closure_no_.clear();
  closure_by_number_.clear();
  closures_seen_ = 0;
  lua_pushnil(main_);
  lua_rawsetp(main_, LUA_REGISTRYINDEX, &kClosuresKey);
  elapsed_before_ns_ = 0;
  last_leaf_ = last_space_leaf_ = kNoNode;
  ran_ = analyzed_ = false;
  primary_ = SampleKind::Time;
}

void LuaSampler::adopt(std::shared_ptr<Profile> profile) {
  reset();
  profiles_[0] = std::move(profile);
  ran_ = true;
}

SamplerStatus LuaSampler::status() const {
  if (active_) return sampling_ ? SamplerStatus::Sampling : SamplerStatus::Suspended;
  if (!ran_) return SamplerStatus::Inactive;
  return analyzed_ ? SamplerStatus::Analyzed : SamplerStatus::Saved;
}

bool LuaSampler::start(lua_State* L, const SamplerSettings& settings, std::string* error) {
  if (active_) {
    if (error) *error = "the profiler is already active";
    return false;
  }
  settings_ = settings;
  counting_ = settings.count_calls || !count_list_.empty();
  primary_ = settings.sample_time || !(settings.gc_samples || settings.alloc_bytes) ? SampleKind::Time
             : settings.gc_samples ? SampleKind::Gc : SampleKind::Space;
  kind_enabled_[0] = primary_ == SampleKind::Time;
  kind_enabled_[1] = settings.gc_samples;
  kind_enabled_[2] = settings.alloc_bytes > 0;
  const std::uint64_t now_unix_ns = clock_ns(CLOCK_REALTIME);
  for (int k = 0; k < 3; ++k) {
    Profile& p = *profiles_[k];
    if (k != static_cast<int>(SampleKind::Space)) {
      p.period_ns = settings.period_ns;
      p.clock = settings.clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall;
    } else {
      p.period_ns = settings.alloc_bytes;
    }
    p.keep_samples = settings.full_stacks;
    if (counting_) p.enable_call_counts();
    if (p.threads.empty()) p.add_thread(0, "main");
    if (p.start_unix_ns == 0)
      p.start_unix_ns = now_unix_ns;
  }
  learn_c_names(L);
  verify_state_layout(L);  // once per process

  // Whatever ran before, L runs now.
  if (chain_.empty() || chain_.back() != L) chain_.assign(1, L);
  current_ = L;
  update_excluded();
  if (counting_) {
    reset_id_cache(L);  // ids are per profile
    fn_ids_.clear();    // frees were not watched while stopped
    last_fp_ = last_caller_fp_ = nullptr;
    take_over_hook(L, L);
  }
  active_ = true;
  budget_.start();  // a fresh run: one-off costs of its first samples come out of the allowance
  ran_ = true;
  analyzed_ = false;
  limit_hit_ = false;
  install_space_hooks(L);
  if (settings.start_sampling && !resume_sampling(L, error, settings.hold_clock)) {
    stop();
    return false;
  }
  return true;
}

bool LuaSampler::resume_sampling(lua_State* L, std::string* error, bool hold_clock) {
  if (!active_) {
    if (error) *error = "the profiler is not started";
    return false;
  }
  if (sampling_) return true;
  if (profile().health.limit_reached) {
    if (error) *error = "max_samples (" + std::to_string(settings_.max_samples) + ") was reached";
    return false;
  }
  pending_ = 0;
  next_arm_ns_ = 0;
  budget_.rebase();  // the timer restarts program time from 0
  armed_ = nullptr;
  pending_c_ = {};
  // L runs now (the chain may name a coroutine that has ended since it was suspended).
  if (chain_.empty() || chain_.back() != L) chain_.assign(1, L);
  current_ = L;
  update_excluded();
  TimerSettings ts{settings_.clock, settings_.period_ns, hold_clock};
  // The timer also measures program time, so it runs even when only gc or space is sampled.
  if (!timer_.start(ts, tick_trampoline, this, error)) return false;
  sampling_ = true;
  return true;
}

void LuaSampler::suspend_sampling() {
  if (!sampling_) return;
  pending_ += timer_.stop();  // no tick runs after this; ticks completed but undelivered count
  critical_ = true;
  disarm(false);
  critical_ = false;
  sampling_ = false;
  std::uint64_t run_ns = timer_.program_ns();
  Profile& time = *profiles_[0];
  // Ticks still waiting for a safe point (the end came first, or sampling was over budget) go
  // to the last stack sampled, the same approximation the budget makes; without one they are
  // dropped, and said so.
  if (std::uint64_t left = pending_.exchange(0)) {
    if (last_leaf_ != kNoNode && !time.health.limit_reached) {
      std::vector<FunctionId> frames = time.tree.stack(last_leaf_);
      time.add_sample(current_process(), elapsed_before_ns_ + run_ns, left, frames.data(), frames.size());
    } else {
      time.health.dropped += left;
    }
  }
  if (pending_bytes_ && last_space_leaf_ != kNoNode && !profiles_[2]->health.limit_reached) {
    Profile& space = *profiles_[2];
    std::vector<FunctionId> frames = space.tree.stack(last_space_leaf_);
    space.add_sample(current_process(), elapsed_before_ns_ + run_ns, pending_bytes_, frames.data(), frames.size());
  }
  pending_bytes_ = 0;
  pending_gc_ = 0;
  elapsed_before_ns_ += run_ns;
  // Time in excluded processes is not the profile's time (Allegro collects nothing there).
  std::uint64_t excluded = excluded_ticks_.exchange(0);
  double excluded_s = static_cast<double>(excluded) * static_cast<double>(settings_.period_ns) / 1e9;
  for (auto& p : profiles_) p->total_seconds += static_cast<double>(run_ns) / 1e9;
  time.total_seconds = std::max(0.0, time.total_seconds - excluded_s);
  time.health.excluded += excluded;
  time.health.signals += timer_.signals();
  time.health.ticks_merged += merged_.exchange(0);
  time.health.no_room += no_room_.exchange(0);
}

void LuaSampler::stop() {
  if (!active_) return;
  suspend_sampling();
  if (counting_) {
    // Threads the program hooked get their hooks back (restore_thread_hooks); the running
    // thread and the main one lose ours now; the others drop it at their next event
    // (on_hook), or are already gone.
    lua_State* running = current_.load();
    for (lua_State* thread : {running, main_})
      if (thread && lua_gethook(thread) == sampler_hook) lua_sethook(thread, nullptr, 0, 0);
    restore_thread_hooks(main_);
  }
  remove_space_hooks(main_);
  active_ = false;  // the GC sentinel sees this and lets itself go
}

void LuaSampler::finish_limit(lua_State* L) {
  if (!limit_hit_) return;
  limit_hit_ = false;
  for (auto& p : profiles_) p->health.limit_reached = true;
  suspend_sampling();
  std::string msg = "profiler: max_samples (" + std::to_string(settings_.max_samples) +
                    ") reached; collection stopped";
  lua_warning(L, msg.c_str(), 0);
}

// ---- Signal path ----------------------------------------------------------------------------
//
// Async-signal-safe: it touches only lock-free atomics, the plain HostHook and PendingCFrame
// written before armed_ is published, lua_gethook/lua_gethookmask/lua_gethookcount (field
// reads) and lua_sethook, which the Lua manual names as safe to call from a signal handler, and
// plain reads of fields of the interrupted thread's own state (lua_state_layout.hpp), which
// cannot change while the handler runs on that thread. It never allocates and never walks the
// stack (settraps inside lua_sethook only marks frames).

void LuaSampler::on_tick(std::uint64_t ticks, std::uint64_t program_ns) {
  if (!settings_.sample_time) return;  // the timer only measures time (gc or space runs)
  if (current_excluded_.load(std::memory_order_relaxed)) {
    excluded_ticks_.fetch_add(ticks, std::memory_order_relaxed);
    return;
  }
  pending_.fetch_add(ticks, std::memory_order_relaxed);
  if (critical_.load(std::memory_order_acquire)) return;  // normal code is moving the arm
  if (program_ns < next_arm_ns_.load(std::memory_order_relaxed)) {
    merged_.fetch_add(ticks, std::memory_order_relaxed);  // over budget: carried as weight
    return;
  }
  lua_State* L = current_.load(std::memory_order_acquire);
  if (!L) return;
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (armed == L) {
    if (lua_gethook(L) == sampler_hook && (lua_gethookmask(L) & LUA_MASKCOUNT)) {
      merged_.fetch_add(ticks, std::memory_order_relaxed);
      // Still pending a whole tick later: a C function runs. It may have filled its stack since
      // the arm; if a hook could now fail for want of slots, the arm is taken back.
      if (!hook_has_room(L)) {
        disarm(false);
        drop_pending();
      } else if (!pending_c_.fn) {
        note_c_frame(L);
      }
      return;
    }
    // The program replaced our hook (debug.sethook): keep its hook as the one to restore.
  } else if (armed != nullptr) {
    return;  // armed on another state; it samples when that state runs again
  }
  if (!arm(L) && pending_.load(std::memory_order_relaxed) > 0) merged_.fetch_add(ticks, std::memory_order_relaxed);
}

// Signal context, or normal context inside critical_. Arms L's next safe point; false when it
// did not. Ticks wait (stay pending) while a hook runs or the program's count has just
// restarted; they are dropped and counted when a hook there could not get its stack slots.
bool LuaSampler::arm(lua_State* L) {
  // A hook is running (the program's): no hook can fire inside it, and the instructions it
  // runs would count against our count of 1 instead of the program's countdown. The ticks
  // wait for the next chance after it, which is where the sample would land anyway.
  // Likewise when the program's count has just restarted: its count hook may be about to be
  // called, and arming now would take that call and lose the program's event.
  const int* countdown = (lua_gethookmask(L) & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
  if (hook_running(L) || (countdown && *countdown == lua_gethookcount(L))) return false;
  if (!hook_has_room(L)) {
    drop_pending();
    return false;
  }
  lua_Hook hook = lua_gethook(L);
  int mask = lua_gethookmask(L);
  // Re-arming over our own armed hook keeps the saved one. (Under call counting our hook is
  // on every thread, with a count when the program's hook has one: not armed for that.)
  bool rearm = armed_.load(std::memory_order_acquire) == L && hook == sampler_hook && (mask & LUA_MASKCOUNT);
  if (!rearm) {
    saved_ = hook_of(L);
    const int* left = (mask & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
    saved_.countdown = left ? *left : -1;
    note_c_frame(L);
  }
  armed_.store(L, std::memory_order_release);
  // COUNT: the next Lua instruction. CALL: a function called (the callee started after the
  // tick, so the sample is the caller's). No RETURN: a return hook on a C function that returns
  // many values can raise "stack overflow"; the C function a tick finds running is noted
  // instead (note_c_frame). The host's own events stay, so its hook still fires.
  int events = saved_.mask & (LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE);
  lua_sethook(L, sampler_hook, LUA_MASKCOUNT | LUA_MASKCALL | events, 1);
  arms_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The C function running on L, if any: the sample taken at the next safe point charges it even
// when it has returned by then.
void LuaSampler::note_c_frame(lua_State* L) {
  RunningFrame f = running_frame(L);
  pending_c_ = f.c_function && f.c_fn ? PendingCFrame{f.c_fn, f.ci} : PendingCFrame{};
}

// Signal context, or normal context inside critical_.
void LuaSampler::drop_pending() {
  no_room_.fetch_add(pending_.exchange(0, std::memory_order_acq_rel), std::memory_order_relaxed);
}

// Puts back the hook the armed state had. `fired`: called from the armed hook itself, which
// restores the program's instruction countdown (restore_countdown); otherwise the countdown
// the arm found is put back here. Signal context, or normal context inside critical_.
void LuaSampler::disarm(bool fired) {
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (!armed) return;
  if (lua_gethook(armed) == sampler_hook) {
    lua_sethook(armed, saved_.hook, saved_.mask, saved_.count);
    int* countdown = fired || saved_.countdown <= 0 ? nullptr : hook_countdown(armed);
    if (countdown) *countdown = saved_.countdown;
  }
  if (!fired) pending_c_ = {};
  armed_.store(nullptr, std::memory_order_release);
}

// From the allocator wrapper: a block as big as a stack near LUAI_MAXSTACK. If it is the armed
// state's stack growing, a hook could now fail for want of slots: take the arm back.
void LuaSampler::on_stack_block() {
  if (!sampling_ || !armed_.load(std::memory_order_acquire)) return;
  bool was_critical = critical_.exchange(true);
  disarm(false);
  drop_pending();
  critical_ = was_critical;
}

// ---- Hook: the safe point -------------------------------------------------------------------

void LuaSampler::on_hook(lua_State* L, lua_Debug* ar) {
  const int event = ar->event;
  const bool was_in_profiler = in_profiler_;
  in_profiler_ = true;  // allocations of our own bookkeeping are not the program's
  if (counting_ && sampling_ && (event == LUA_HOOKCALL || event == LUA_HOOKTAILCALL) &&
      !current_excluded_.load(std::memory_order_relaxed)) {
    count_call(L, ar);
    // The next call's hook could fail for want of stack slots: step aside until there is room.
    if (!hook_has_room(L) && armed_.load(std::memory_order_acquire) != L) {
      lift_counting_hook(L);
      in_profiler_ = was_in_profiler;
      HostHook program = hook_of(L);  // the program's, now restored
      if (program.hook && (program.mask & event_mask(event))) program.hook(L, ar);
      return;
    }
  }

  if (armed_.load(std::memory_order_acquire) == L) {
    HostHook host = saved_;
    timer_.enter_profiler();
    // At a call event the callee had not started when the tick came: leave it out. A tail
    // call has replaced the frame that was running: the callee carries on its work.
    take_sample(L, event == LUA_HOOKCALL);
    critical_ = true;
    disarm(true);
    critical_ = false;
    bool count_due = restore_countdown(L, host, event);
    relift_counting_hook(L);
    leave_profiler_within_budget();
    in_profiler_ = was_in_profiler;
    finish_limit(L);
    // The program's hook gets the events it asked for: this one, unless it is our count event.
    HostHook program = host.hook != sampler_hook ? host : program_hook(L, L);
    bool wanted = event == LUA_HOOKCOUNT ? count_due : (program.mask & event_mask(event)) != 0;
    if (program.hook && program.hook != sampler_hook && wanted) program.hook(L, ar);
    return;
  }
  in_profiler_ = was_in_profiler;
  if (counting_ && active_) {
    // Our counting hook: pass the events the program's own hook asked for.
    if (program_hooks_) {
      HostHook program = program_hook(L, L);
      if (program.hook && (program.mask & event_mask(event))) program.hook(L, ar);
      if (lua_gethookmask(L) == (LUA_MASKCALL | program.mask)) return;
    } else if (lua_gethookmask(L) == LUA_MASKCALL) {
      return;
    }
  }
  // A stray hook: copied into a new thread by lua_newthread, or left after the profiler
  // stopped. Put back what the state should have.
  if (counting_ && active_)
    install_counting_hook(L, L);
  else
    lua_sethook(L, nullptr, 0, 0);
}

void LuaSampler::leave_profiler_within_budget() {
  std::uint64_t at = timer_.program_ns();  // frozen at enter_profiler
  std::uint64_t cost = timer_.leave_profiler();
  next_arm_ns_.store(budget_.spend(at, cost), std::memory_order_relaxed);
}

bool LuaSampler::over_budget() const {
  return timer_.program_ns() < next_arm_ns_.load(std::memory_order_relaxed);
}

void LuaSampler::take_sample(lua_State* L, bool skip_leaf) {
  std::uint64_t ticks = pending_.exchange(0, std::memory_order_acq_rel);
  std::uint64_t bytes = pending_bytes_;
  pending_bytes_ = 0;
  PendingCFrame c = pending_c_;
  pending_c_ = {};
  if (ticks == 0 && bytes == 0) return;
  if (current_excluded_.load(std::memory_order_relaxed) && L == current_.load(std::memory_order_relaxed)) {
    excluded_ticks_.fetch_add(ticks, std::memory_order_relaxed);  // armed before the exclusion
    return;
  }
  seek_ci_ = c.fn ? c.ci : nullptr;
  walk_sample(L, skip_leaf ? 1 : 0);
  // The call's caller is the profiler itself (a tick between starting the timer and calling
  // the profiled function): the callee, about to run, is the best owner of the sample.
  if (skip_leaf && frames_.empty()) walk_sample(L, 0);
  // The C function the tick found has returned (else the walk met its frame): it is the leaf.
  if (c.fn && !seen_ci_) append_c_frame(c.fn);
  seek_ci_ = nullptr;
  if (ticks) last_leaf_ = record(SampleKind::Time, ticks);
  if (bytes) last_space_leaf_ = record(SampleKind::Space, bytes);
}

void LuaSampler::append_c_frame(const void* fn) {
  void* key = const_cast<void*>(fn);
  if (boundaries_.count(key) || own_.count(key)) return;  // the profiler's own
  // The signal handler's reading may be a result being moved over the function's slot: only a
  // C function known by name or seen on a stack is believed.
  if (!c_ids_.count(key) && !c_names_.count(key)) return;
  frames_.push_back(c_function_id(fn, nullptr));
  lines_.push_back(0);
}

std::uint64_t LuaSampler::profile_time() const {
  return elapsed_before_ns_ + (sampling_ ? timer_.program_ns() : 0);
}

std::uint32_t LuaSampler::current_process() {
  if (!settings_.native_zones) return 0;
  const native::Fiber& f = *native::current_fiber();
  if (std::find(processes_.begin(), processes_.end(), f.process) == processes_.end()) {
    processes_.push_back(f.process);
    for (auto& p : profiles_) p->add_thread(f.process, f.name, native::host_thread_of(f));
  }
  return f.process;
}

NodeId LuaSampler::record(SampleKind kind, std::uint64_t weight) {
  Profile& p = *profiles_[static_cast<int>(kind)];
  std::uint32_t process = current_process();
  if (settings_.native_zones && native::current_fiber()->depth > 0) {
    // The zones open on this fiber enclose the Lua stack: they are its outer frames.
    std::vector<FunctionId> zones;
    append_zone_frames(*native::current_fiber(), &zone_ids_,
                       [&](FunctionInfo info) { return new_function(std::move(info)); }, &zones);
    frames_.insert(frames_.begin(), zones.begin(), zones.end());
    lines_.insert(lines_.begin(), zones.size(), 0);
  }
  NodeId leaf = p.add_sample(process, profile_time(), weight, frames_.data(), frames_.size(), lines_.data());
  if (++p.health.samples_taken >= settings_.max_samples && settings_.max_samples) limit_hit_ = true;
  return leaf;
}

std::uint32_t LuaSampler::chain_index(lua_State* L) const {
  for (std::size_t i = chain_.size(); i-- > 0;)
    if (chain_[i] == L) return static_cast<std::uint32_t>(i);
  return UINT32_MAX;
}

// Fills frames_ and lines_ root first, ready for record().
void LuaSampler::walk_sample(lua_State* L, int first_level) {
  frames_.clear();
  lines_.clear();
  seen_ci_ = false;
  walk(L, first_level);
  std::reverse(frames_.begin(), frames_.end());
  std::reverse(lines_.begin(), lines_.end());
}

// Leaf-first frames of L (into frames_, their lines into lines_), then of each resumer up the
// chain, until a profiler entry point (everything below it is the caller's, not the profiled
// function's). Returns true when it stopped at such a boundary.
bool LuaSampler::walk(lua_State* L, int first_level) {
  std::uint32_t idx = chain_index(L);
  lua_State* s = L;
  const bool linear = frame_walk_verified(L);  // frames come with i_ci, so the func slot is readable
  for (;;) {
    lua_Debug ar;
    FrameWalk frames;
    // A recursion repeats one closure frame after frame: only the first of a run pays for its
    // identity (lua_getinfo "S" and a hash lookup); the others read the func slot and a line.
    const void* run_fp = nullptr;
    FunctionId run_id = kNoFunction;
    bool checked = false, slot_ok = false;
    for (bool ok = frames.first(s, first_level, &ar); ok; ok = frames.next(&ar)) {
      if (ar.i_ci == seek_ci_) seen_ci_ = true;
      const void* fp = slot_ok ? frame_function_pointer(&ar) : nullptr;
      if (fp && fp == run_fp) {
        lua_getinfo(s, "l", &ar);
        frames_.push_back(run_id);
        lines_.push_back(ar.currentline);
        continue;
      }
      bool boundary = false;
      FunctionId id = intern(s, &ar, &boundary);
      if (boundary) return true;
      if (id != kNoFunction) {
        frames_.push_back(id);
        lines_.push_back(line_);
      }
      if (linear && !checked) {
        // Checked once per walk on its first frame: the slot read must agree with Lua's own.
        checked = true;
        lua_getinfo(s, "f", &ar);
        slot_ok = lua_topointer(s, -1) == frame_function_pointer(&ar);
        lua_pop(s, 1);
      }
      if (slot_ok) {
        run_fp = id != kNoFunction ? frame_function_pointer(&ar) : nullptr;
        run_id = id;
      }
    }
    if (idx == UINT32_MAX || idx == 0) return false;
    s = chain_[--idx];
    first_level = 0;
  }
}

// ---- Controls -----------------------------------------------------------------------------

void LuaSampler::set_process_profiled(lua_State* L, lua_State* thread, bool profiled) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kExcludedKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kExcludedKey);
  }
  // Excluded threads are held, so no new thread can take an excluded one's address.
  if (thread == L) lua_pushthread(L);
  else {
    lua_pushthread(thread);
    lua_xmove(thread, L, 1);
  }
  if (profiled) {
    lua_pushnil(L);
    excluded_.erase(thread);
  } else {
    lua_pushboolean(L, 1);
    excluded_.insert(thread);
  }
  lua_rawset(L, -3);
  lua_pop(L, 1);
  update_excluded();
}

void LuaSampler::update_excluded() {
  lua_State* L = current_.load(std::memory_order_acquire);
  current_excluded_.store(L && !excluded_.empty() && excluded_.count(L) > 0, std::memory_order_relaxed);
}

// ---- Coroutines -----------------------------------------------------------------------------

void LuaSampler::enter_coroutine(lua_State* from, lua_State* co) {
  if (chain_.empty() || chain_.back() != from) chain_.assign(1, from);
  chain_.push_back(co);
  // Hooked from C, or before the run: counted from now on (Lua work, before the critical part).
  if (active_ && counting_ && lua_gethook(co) != sampler_hook && !lifted(from, co)) take_over_hook(from, co);
  critical_ = true;
  current_.store(co, std::memory_order_release);
  update_excluded();
  if (active_) {
    // A pending sample belongs to whatever runs next: move the arm into the coroutine.
    if (armed_.load() == from) disarm(false);
    // An excluded coroutine takes no sample: pending ticks wait for the resumer's next one.
    if (pending_.load() > 0 && !current_excluded_.load()) arm(co);
  }
  critical_ = false;
}

void LuaSampler::leave_coroutine(lua_State* co, lua_State* from) {
  if (!chain_.empty() && chain_.back() == co) {
    chain_.pop_back();
  } else {
    chain_.assign(1, from);
  }
  if (chain_.empty()) chain_.push_back(from);
  critical_ = true;
  current_.store(from, std::memory_order_release);
  update_excluded();
  if (active_ && armed_.load() == co) {
    disarm(false);
    if (pending_.load() > 0) arm(from);
  }
  critical_ = false;
}

// ---- Embedded in a native host -------------------------------------------------------------

void LuaSampler::sample_now() {
  if (!sampling_ || in_profiler_ || pending_.load(std::memory_order_relaxed) == 0) return;
  in_profiler_ = true;
  timer_.enter_profiler();
  critical_ = true;
  disarm(false);
  critical_ = false;
  std::uint64_t ticks = pending_.exchange(0, std::memory_order_acq_rel);
  // Lua runs here if the running state is inside a call (the host called into Lua, and Lua
  // into the host function that is changing zones); otherwise only native code ran.
  lua_State* L = current_.load(std::memory_order_relaxed);
  lua_Debug ar;
  frames_.clear();
  lines_.clear();
  if (L && lua_status(L) == LUA_OK && lua_getstack(L, 0, &ar)) walk_sample(L, 0);
  if (current_excluded_.load(std::memory_order_relaxed))
    excluded_ticks_.fetch_add(ticks, std::memory_order_relaxed);
  else if (ticks)
    last_leaf_ = record(SampleKind::Time, ticks);
  leave_profiler_within_budget();
  in_profiler_ = false;
  finish_limit(L ? L : main_);
}

void LuaSampler::switch_fiber(native::Fiber* from, native::Fiber* to) {
  critical_ = true;
  disarm(false);
  critical_ = false;
  from->saved_chain.assign(chain_.begin(), chain_.end());
  chain_.clear();
  for (void* s : to->saved_chain) chain_.push_back(static_cast<lua_State*>(s));
  if (chain_.empty() && to->script) chain_.push_back(static_cast<lua_State*>(to->script));
  // A fiber that runs no Lua of this universe: ticks wait for its zones (sample_now).
  lua_State* running = chain_.empty() ? nullptr : chain_.back();
  if (running && active_ && counting_ && lua_gethook(running) != sampler_hook && !lifted(running, running))
    take_over_hook(running, running);
  critical_ = true;
  current_.store(running, std::memory_order_release);
  update_excluded();
  if (running && sampling_ && pending_.load() > 0 && !current_excluded_.load()) arm(running);
  critical_ = false;
}

void LuaSampler::mark_frame() {
  if (!active_) return;  // no run, no frames
  sample_now();  // the ticks so far belong to the frame that ends
  Profile& p = profile();
  p.frame_marks.push_back({current_process(), profile_time()});
}

}  // namespace scriptprof::lua
