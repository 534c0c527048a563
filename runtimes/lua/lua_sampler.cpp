#include "lua_sampler.hpp"

#include "lua_frame_walk.hpp"
#include "lua_hook_fields.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <algorithm>
#include <cstring>
#include <ctime>

namespace scriptprof::lua {

namespace {

const char kSamplerKey = 0;  // its address keys the sampler in the registry
const char kIdCacheKey = 0;  // its address keys the function -> id cache in the registry
const char kClosuresKey = 0;  // closure ids: {ids = {[closure] = id}, closures = {[id] = closure}}, weak
const char kCountListKey = 0;  // the functions of the count list, held for the run
const char kExcludedKey = 0;  // excluded processes, held until reset

// Codes the id cache stores besides FunctionIds.
constexpr lua_Integer kCachedBoundary = -1;
constexpr lua_Integer kCachedOwn = -2;

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

// Signal context: forwards to the sampler (see LuaSampler::on_tick for why it is safe).
void tick_trampoline(void* context, std::uint64_t ticks, std::uint64_t program_ns) {
  static_cast<LuaSampler*>(context)->on_tick(ticks, program_ns);
}

// The share of program time the profiler may spend sampling. A sample that cost more (a stack
// 100k frames deep) defers the next arming; the ticks in between are not lost but carried as
// the next sample's weight, which is sampling at a lower rate: unbiased, and no crawl.
constexpr std::uint64_t kCostBudgetDivisor = 4;  // at most 1/4 of program time

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

constexpr std::uint8_t kNameTries = 4;  // sightings on which to look for a missing name

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
  id_source_.clear();
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

FunctionId LuaSampler::new_function(FunctionInfo info, std::string source, std::uint8_t name_tries,
                                     lua_Integer closure_no) {
  FunctionId id = profiles_[0]->add_function(info);
  profiles_[1]->add_function(info);
  profiles_[2]->add_function(std::move(info));
  id_source_.push_back(std::move(source));
  name_tries_.push_back(name_tries);
  closure_no_.push_back(closure_no);
  return id;
}

void LuaSampler::rename_function(FunctionId id, const std::string& name) {
  std::string full = closure_no_[id] ? name + " [closure " + std::to_string(closure_no_[id]) + "]" : name;
  for (auto& p : profiles_) p->functions.rename(id, full);
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
  locate_hook_fields(L);  // once per process

  // Whatever ran before, L runs now.
  if (chain_.empty() || chain_.back() != L) chain_.assign(1, L);
  current_ = L;
  update_excluded();
  if (counting_) {
    reset_id_cache(L);  // ids are per profile
    fn_ids_.clear();    // frees were not watched while stopped
    last_fp_ = last_caller_fp_ = nullptr;
    program_hooks_.clear();
    take_over_hook(L);
  }
  active_ = true;
  ran_ = true;
  analyzed_ = false;
  limit_hit_ = false;
  install_space_hooks(L);
  if (settings.start_sampling && !resume_sampling(error, settings.hold_clock)) {
    stop();
    return false;
  }
  return true;
}

bool LuaSampler::resume_sampling(std::string* error, bool hold_clock) {
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
  armed_ = nullptr;
  current_ = chain_.empty() ? main_ : chain_.back();
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
  disarm();
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
}

void LuaSampler::stop() {
  if (!active_) return;
  suspend_sampling();
  if (counting_) {
    // Threads the program hooked get their hooks back; the others drop ours at their next
    // event (on_hook), or are already gone.
    critical_ = true;
    if (!chain_.empty() && lua_gethook(chain_.front()) == sampler_hook && !program_hooks_.count(chain_.front()))
      lua_sethook(chain_.front(), nullptr, 0, 0);
    for (const auto& [thread, hook] : program_hooks_)
      if (lua_gethook(thread) == sampler_hook) lua_sethook(thread, hook.hook, hook.mask, hook.count);
    program_hooks_.clear();
    critical_ = false;
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
// Async-signal-safe: it touches only lock-free atomics, the plain HostHook written before
// armed_ is published, and lua_gethook/lua_gethookmask/lua_gethookcount (field reads) and
// lua_sethook, which the Lua manual names as safe to call from a signal handler, and plain
// reads of two int-sized fields of the state (lua_hook_fields.hpp). It never allocates and
// never walks the stack (settraps inside lua_sethook only marks frames).

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
    int mask = lua_gethookmask(L);
    if (lua_gethook(L) == sampler_hook && (mask & LUA_MASKCOUNT)) {
      merged_.fetch_add(ticks, std::memory_order_relaxed);
      // Still pending a whole tick later: most likely inside a long C function, whose return
      // event is the next safe point that still has it on the stack.
      if (!(mask & LUA_MASKRET)) lua_sethook(L, sampler_hook, mask | LUA_MASKRET, 1);
      return;
    }
    // The program replaced our hook (debug.sethook): keep its hook as the one to restore.
  } else if (armed != nullptr) {
    return;  // armed on another state; it samples when that state runs again
  }
  // A hook is running (the program's): no hook can fire inside it, and the instructions it
  // runs would count against our count of 1 instead of the program's countdown. The ticks
  // wait for the next tick after it, which is where the sample would land anyway.
  // Likewise when the program's count has just restarted: its count hook may be about to be
  // called, and arming now would take that call and lose the program's event.
  const int* countdown = (lua_gethookmask(L) & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
  if (hook_running(L) || (countdown && *countdown == lua_gethookcount(L))) {
    merged_.fetch_add(ticks, std::memory_order_relaxed);
    return;
  }
  arm(L, 0);
}

void LuaSampler::arm(lua_State* L, int extra_mask) {
  lua_Hook hook = lua_gethook(L);
  int mask = lua_gethookmask(L);
  // Re-arming over our own armed hook keeps the saved one. (Under call counting our hook is
  // on every thread, with a count when the program's hook has one: not armed for that.)
  bool rearm = armed_.load(std::memory_order_acquire) == L && hook == sampler_hook && (mask & LUA_MASKCOUNT);
  if (!rearm) {
    saved_ = hook_of(L);
    const int* left = (mask & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
    saved_.countdown = left ? *left : -1;
  }
  armed_.store(L, std::memory_order_release);
  // COUNT: the next Lua instruction. CALL: a C function calling out (the callee started after
  // the tick, so the sample is the caller's). The host's own events stay, so its hook still fires.
  int events = saved_.mask & (LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE);
  lua_sethook(L, sampler_hook, LUA_MASKCOUNT | LUA_MASKCALL | extra_mask | events, 1);
  arms_.fetch_add(1, std::memory_order_relaxed);
}

// Normal context, with critical_ set.
void LuaSampler::disarm() {
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (!armed) return;
  if (lua_gethook(armed) == sampler_hook) lua_sethook(armed, saved_.hook, saved_.mask, saved_.count);
  armed_.store(nullptr, std::memory_order_release);
}

// ---- Hook: the safe point -------------------------------------------------------------------

void LuaSampler::on_hook(lua_State* L, lua_Debug* ar) {
  const int event = ar->event;
  const bool was_in_profiler = in_profiler_;
  in_profiler_ = true;  // allocations of our own bookkeeping are not the program's
  if (counting_ && sampling_ && (event == LUA_HOOKCALL || event == LUA_HOOKTAILCALL) &&
      !current_excluded_.load(std::memory_order_relaxed))
    count_call(L, ar);

  if (armed_.load(std::memory_order_acquire) == L) {
    HostHook host = saved_;
    timer_.enter_profiler();
    // At a call event the callee had not started when the tick came: leave it out.
    take_sample(L, event == LUA_HOOKCALL || event == LUA_HOOKTAILCALL);
    critical_ = true;
    disarm();
    critical_ = false;
    bool count_due = restore_countdown(L, host, event);
    leave_profiler_within_budget();
    in_profiler_ = was_in_profiler;
    finish_limit(L);
    // The program's hook gets the events it asked for: this one, unless it is our count event.
    HostHook program = host.hook != sampler_hook ? host : program_hook(L);
    bool wanted = event == LUA_HOOKCOUNT ? count_due : (program.mask & event_mask(event)) != 0;
    if (program.hook && program.hook != sampler_hook && wanted) program.hook(L, ar);
    return;
  }
  in_profiler_ = was_in_profiler;
  if (counting_ && active_) {
    // Our counting hook: pass the events the program's own hook asked for.
    if (!program_hooks_.empty()) {
      HostHook program = program_hook(L);
      if (program.hook && (program.mask & event_mask(event))) program.hook(L, ar);
      if (lua_gethookmask(L) == (LUA_MASKCALL | program.mask)) return;
    } else if (lua_gethookmask(L) == LUA_MASKCALL) {
      return;
    }
  }
  // A stray hook: copied into a new thread by lua_newthread, or left after the profiler
  // stopped. Put back what the state should have.
  critical_ = true;
  if (counting_ && active_)
    install_counting_hook(L);
  else
    lua_sethook(L, nullptr, 0, 0);
  critical_ = false;
}

void LuaSampler::leave_profiler_within_budget() {
  std::uint64_t at = timer_.program_ns();  // frozen at enter_profiler
  std::uint64_t cost = timer_.leave_profiler();
  next_arm_ns_.store(at + cost * kCostBudgetDivisor, std::memory_order_relaxed);
}

bool LuaSampler::over_budget() const {
  return timer_.program_ns() < next_arm_ns_.load(std::memory_order_relaxed);
}

// Under call counting the program's own hook on L: its events reach it through ours.
HostHook LuaSampler::program_hook(lua_State* L) const {
  auto it = program_hooks_.find(L);
  return it == program_hooks_.end() ? HostHook{} : it->second;
}

// Our counting hook on L, carrying the events and the count of the program's hook there.
void LuaSampler::install_counting_hook(lua_State* L) {
  HostHook program = program_hook(L);
  lua_sethook(L, sampler_hook, LUA_MASKCALL | program.mask, program.count);
}

// Our counting hook on L; a hook the program had set there is kept under ours.
void LuaSampler::take_over_hook(lua_State* L) {
  lua_Hook hook = lua_gethook(L);
  if (hook && hook != sampler_hook) program_hooks_[L] = hook_of(L);
  install_counting_hook(L);
}

void LuaSampler::set_program_hook(lua_State* L1, lua_Hook hook, int mask, int count) {
  critical_ = true;
  bool was_armed = armed_.load() == L1;
  if (was_armed) disarm();
  if (active_ && counting_) {
    if (hook) program_hooks_[L1] = {hook, mask, count};
    else program_hooks_.erase(L1);
    install_counting_hook(L1);
  } else {
    lua_sethook(L1, hook, mask, count);
  }
  // A sample still pending stays armed, over the new hook.
  if (was_armed && active_ && pending_.load() > 0) arm(L1, 0);
  critical_ = false;
}

HostHook LuaSampler::program_visible_hook(lua_State* L1) {
  critical_ = true;
  HostHook h = hook_of(L1);
  if (h.hook == sampler_hook && armed_.load() == L1) h = saved_;
  if (h.hook == sampler_hook) h = program_hook(L1);
  critical_ = false;
  return h;
}

// lua_sethook restarted the program's instruction count: put back what was left of it, less
// the instruction this count event stands for. True when the program's own count event falls
// on this instruction, as it would have without the sample (the restart is then right).
bool LuaSampler::restore_countdown(lua_State* L, const HostHook& host, int event) {
  if (!(host.mask & LUA_MASKCOUNT)) return false;
  int* countdown = hook_countdown(L);
  if (!countdown || host.countdown < 0) return false;  // not located: the count restarts
  int left = host.countdown - (event == LUA_HOOKCOUNT ? 1 : 0);
  if (left <= 0) return true;
  if (lua_gethook(L) == host.hook && lua_gethookmask(L) == host.mask) *countdown = left;
  return false;
}

void LuaSampler::take_sample(lua_State* L, bool skip_leaf) {
  std::uint64_t ticks = pending_.exchange(0, std::memory_order_acq_rel);
  std::uint64_t bytes = pending_bytes_;
  pending_bytes_ = 0;
  if (ticks == 0 && bytes == 0) return;
  if (current_excluded_.load(std::memory_order_relaxed) && L == current_.load(std::memory_order_relaxed)) {
    excluded_ticks_.fetch_add(ticks, std::memory_order_relaxed);  // armed before the exclusion
    return;
  }
  walk_sample(L, skip_leaf ? 1 : 0);
  // The call's caller is the profiler itself (a tick between starting the timer and calling
  // the profiled function): the callee, about to run, is the best owner of the sample.
  if (skip_leaf && frames_.empty()) walk_sample(L, 0);
  if (ticks) last_leaf_ = record(SampleKind::Time, ticks);
  if (bytes) last_space_leaf_ = record(SampleKind::Space, bytes);
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

// ---- Function identity ----------------------------------------------------------------------

FunctionId LuaSampler::intern(lua_State* L, lua_Debug* ar, bool* boundary) {
  lua_getinfo(L, "Sl", ar);
  line_ = ar->currentline;
  if (ar->what[0] == 'C') {
    lua_getinfo(L, "f", ar);
    void* fp = reinterpret_cast<void*>(lua_tocfunction(L, -1));
    lua_pop(L, 1);
    if (boundaries_.count(fp)) {
      *boundary = true;
      return kNoFunction;
    }
    if (own_.count(fp)) return kNoFunction;
    auto it = c_ids_.find(fp);
    if (it != c_ids_.end()) return it->second;
    FunctionInfo info;
    info.kind = FunctionKind::Native;
    if (auto n = c_names_.find(fp); n != c_names_.end()) {
      info.name = n->second;
    } else {
      lua_getinfo(L, "n", ar);
      info.name = ar->name ? ar->name : "?";
    }
    FunctionId id = new_function(std::move(info));
    c_ids_.emplace(fp, id);
    return id;
  }
  const bool closure = settings_.interpret_closures && ar->what[0] != 'm';
  if (closure) {
    // Allegro's :interpret-closures: the closure object is the identity. A weak-keyed table
    // maps each one to its id, so a collected closure's address cannot pass its id on.
    lua_getinfo(L, "f", ar);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) == LUA_TTABLE) {
      lua_getfield(L, -1, "ids");
      lua_pushvalue(L, -3);
      if (lua_rawget(L, -2) == LUA_TNUMBER) {
        FunctionId id = static_cast<FunctionId>(lua_tointeger(L, -1));
        lua_pop(L, 4);
        learn_name(L, ar, id);
        return id;
      }
      lua_pop(L, 4);
    } else {
      lua_pop(L, 2);
    }
  } else {
    LuaKey key{ar->source, ar->linedefined, ar->lastlinedefined};
    auto it = lua_ids_.find(key);
    if (it != lua_ids_.end() && id_source_[it->second] == ar->source) {
      learn_name(L, ar, it->second);
      return it->second;
    }
  }
  // New prototype (or a new chunk loaded where a collected one used to be), or a new closure.
  FunctionInfo info;
  info.file = ar->short_src;
  info.line = ar->linedefined;
  info.last_line = ar->lastlinedefined;
  if (ar->what[0] == 'm') {
    info.kind = FunctionKind::Main;
    info.name = "main chunk";
  } else {
    lua_getinfo(L, "n", ar);
    info.name = ar->name ? ar->name : "?";
  }
  bool unnamed = info.kind == FunctionKind::Script && info.name == "?";
  // Closures are numbered once their prototype has two: a function made once needs no number.
  LuaKey key{ar->source, ar->linedefined, ar->lastlinedefined};
  auto sibling = lua_ids_.find(key);
  bool second = closure && sibling != lua_ids_.end() && id_source_[sibling->second] == ar->source;
  lua_Integer number = 0;
  if (second) {
    FunctionId first = sibling->second;
    if (!closure_no_[first]) {
      closure_no_[first] = ++closures_seen_;
      closure_by_number_.push_back(first);
      rename_function(first, profiles_[0]->functions.info(first).name);
    }
    number = ++closures_seen_;
  }
  if (number) info.name += " [closure " + std::to_string(number) + "]";
  FunctionId id = new_function(std::move(info), ar->source, unnamed ? kNameTries : 0, number);
  if (number) closure_by_number_.push_back(id);
  if (closure) remember_closure(L, ar, id);
  if (!second) lua_ids_[key] = id;  // the prototype's first function (closures: its first closure)
  return id;
}

// A function first seen unnamed (called from C, or by a tail call) takes the name a later
// call site gives it.
void LuaSampler::learn_name(lua_State* L, lua_Debug* ar, FunctionId id) {
  if (name_tries_[id] == 0) return;
  --name_tries_[id];
  lua_getinfo(L, "n", ar);
  std::string global;
  if (ar->name) {
    rename_function(id, ar->name);
    name_tries_[id] = 0;
  } else if (global_name(L, ar, &global)) {
    // Called from the host (lua_pcall), a function has no calling instruction to name it;
    // its global or module field does, as in Lua's own tracebacks.
    rename_function(id, global);
    name_tries_[id] = 0;
  }
}

// "think" for _G.think, "ai.think" for package.loaded.ai.think: a shallow search, no
// metamethods (raw access only), nothing allocated.
bool LuaSampler::global_name(lua_State* L, lua_Debug* ar, std::string* out) {
  if (!lua_checkstack(L, 6)) return false;
  int top = lua_gettop(L);
  lua_getinfo(L, "f", ar);
  int fn = lua_gettop(L);
  bool found = false;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) == LUA_TTABLE) {
    lua_pushnil(L);
    while (!found && lua_next(L, fn + 1)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
          if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
            std::string module = lua_tostring(L, -4);
            *out = (module == "_G" ? "" : module + ".") + lua_tostring(L, -2);
            found = true;
            lua_pop(L, 2);
            break;
          }
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
    }
    if (found) lua_pop(L, 1);  // the module key lua_next left
  }
  lua_settop(L, top);
  return found;
}

// Records a closure both ways: closure -> id (weak keys) for identity, and id -> closure (weak
// values) for profiler.closure(n).
void LuaSampler::remember_closure(lua_State* L, lua_Debug* ar, FunctionId id) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    for (const char* field : {"ids", "closures"}) {
      lua_createtable(L, 0, 0);
      lua_createtable(L, 0, 1);
      lua_pushstring(L, field[0] == 'i' ? "k" : "v");
      lua_setfield(L, -2, "__mode");
      lua_setmetatable(L, -2);
      lua_setfield(L, -2, field);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kClosuresKey);
  }
  int t = lua_gettop(L);
  lua_getinfo(L, "f", ar);
  lua_getfield(L, t, "ids");
  lua_pushvalue(L, -2);
  lua_pushinteger(L, static_cast<lua_Integer>(id));
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_getfield(L, t, "closures");
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, static_cast<lua_Integer>(id));
  lua_settop(L, t - 1);
}

void LuaSampler::push_closure(lua_State* L, lua_Integer n) {
  if (n < 1 || static_cast<std::size_t>(n) > closure_by_number_.size() ||
      lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) != LUA_TTABLE) {
    lua_pushnil(L);
    return;
  }
  lua_getfield(L, -1, "closures");
  lua_rawgeti(L, -1, static_cast<lua_Integer>(closure_by_number_[static_cast<std::size_t>(n) - 1]));
  lua_replace(L, -3);
  lua_pop(L, 1);
}

FunctionId LuaSampler::function_of(lua_State* L, lua_Debug* ar) {
  bool boundary = false;
  return intern(L, ar, &boundary);
}

bool LuaSampler::find_function_value(lua_State* L, int idx, FunctionId* out) {
  if (lua_iscfunction(L, idx)) {
    auto it = c_ids_.find(reinterpret_cast<void*>(lua_tocfunction(L, idx)));
    if (it == c_ids_.end()) return false;
    *out = it->second;
    return true;
  }
  if (!lua_isfunction(L, idx)) return false;
  idx = lua_absindex(L, idx);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) == LUA_TTABLE) {  // interpret_closures
    lua_getfield(L, -1, "ids");
    lua_pushvalue(L, idx);
    bool found = lua_rawget(L, -2) == LUA_TNUMBER;
    if (found) *out = static_cast<FunctionId>(lua_tointeger(L, -1));
    lua_pop(L, 3);
    if (found) return true;
  } else {
    lua_pop(L, 1);
  }
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">S", &ar);
  auto it = lua_ids_.find(LuaKey{ar.source, ar.linedefined, ar.lastlinedefined});
  if (it == lua_ids_.end() || id_source_[it->second] != ar.source) return false;
  *out = it->second;
  return true;
}

// Names library C functions as "string.rep" from package.loaded, as the debug library's
// traceback does; call-site names ("rep", "?") are a poor second.
void LuaSampler::learn_c_names(lua_State* L) {
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
      std::string module = lua_tostring(L, -2);
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_iscfunction(L, -1)) {
          void* fp = reinterpret_cast<void*>(lua_tocfunction(L, -1));
          std::string field = lua_tostring(L, -2);
          std::string name = module == LUA_GNAME ? field : module + "." + field;
          auto [pos, inserted] = c_names_.emplace(fp, name);
          // Prefer the global name ("print") over a module path ("_G.print").
          if (!inserted && module == LUA_GNAME) pos->second = name;
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
}

// ---- Call counting --------------------------------------------------------------------------
//
// Every call passes here, so identity must be cheap: the function object itself keys a
// weak-keyed table of ids. When a closure is collected its entry goes with it, so a new
// closure at the same address cannot inherit a stale identity. (No clock reads bracket this
// work: on these machines a thread CPU clock read is a system call; counting is opt-in time.)

void LuaSampler::reset_id_cache(lua_State* L) {
  lua_createtable(L, 0, 64);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kIdCacheKey);
}

FunctionId LuaSampler::cached_id(lua_State* L, lua_Debug* ar, bool* boundary) {
  lua_getinfo(L, "f", ar);  // the function object
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kIdCacheKey) != LUA_TTABLE) {
    lua_pop(L, 2);
    return intern(L, ar, boundary);
  }
  lua_pushvalue(L, -2);
  if (lua_rawget(L, -2) == LUA_TNUMBER) {
    lua_Integer code = lua_tointeger(L, -1);
    lua_pop(L, 3);
    *boundary = code == kCachedBoundary;
    return code < 0 ? kNoFunction : static_cast<FunctionId>(code);
  }
  lua_pop(L, 1);
  FunctionId id = intern(L, ar, boundary);
  lua_pushvalue(L, -2);
  lua_pushinteger(L, *boundary ? kCachedBoundary : id == kNoFunction ? kCachedOwn : static_cast<lua_Integer>(id));
  lua_rawset(L, -3);
  lua_pop(L, 2);
  return id;
}

void LuaSampler::count_call(lua_State* L, lua_Debug* ar) {
  if (!function_pointer_verified(L, ar)) return count_call_slowly(L, ar);
  // Fast path: the function objects are read from the frames and looked up in a C++ map that
  // the allocator wrapper clears of every freed block, so an address reused by a new closure
  // never inherits an old id.
  const void* callee_fp = frame_function_pointer(ar);
  if (!callee_fp) return;
  if (!listed(callee_fp)) return;
  FunctionId callee;
  if (callee_fp == last_fp_) {
    callee = last_id_;  // recursion and loops call the same function again and again
  } else if (!fn_ids_.find(callee_fp, &callee)) {
    bool boundary = false;
    callee = intern(L, ar, &boundary);
    fn_ids_.insert(callee_fp, callee);
  }
  last_fp_ = callee_fp;
  last_id_ = callee;
  if (callee == kNoFunction) return;
  // A tail call replaced its caller's frame: the caller is unknown then.
  FunctionId caller = kNoFunction;
  if (ar->event == LUA_HOOKCALL) {
    if (const void* caller_fp = frame_function_pointer(ar, true)) {
      if (caller_fp == last_caller_fp_) {
        caller = last_caller_id_;
      } else if (!fn_ids_.find(caller_fp, &caller)) {
        lua_Debug below;
        bool boundary = false;
        if (lua_getstack(L, 1, &below)) {
          caller = intern(L, &below, &boundary);
          fn_ids_.insert(caller_fp, caller);
        }
      }
      last_caller_fp_ = caller_fp;
      last_caller_id_ = caller;
    }
  }
  record_call(callee, caller);
}

bool LuaSampler::listed(const void* f) const {
  return count_list_.empty() || std::find(count_list_.begin(), count_list_.end(), f) != count_list_.end();
}

void LuaSampler::record_call(FunctionId callee, FunctionId caller) {
  for (int k = 0; k < 3; ++k)
    if (kind_enabled_[k]) profiles_[k]->add_call(callee, caller);
}

void LuaSampler::on_free(const void* block) {
  fn_ids_.erase(block);
  if (block == last_fp_) last_fp_ = nullptr;
  if (block == last_caller_fp_) last_caller_fp_ = nullptr;
}

// Where the frame layout is not the one we know: identities through a weak-keyed table.
void LuaSampler::count_call_slowly(lua_State* L, lua_Debug* ar) {
  if (!count_list_.empty()) {
    lua_getinfo(L, "f", ar);
    const void* f = lua_topointer(L, -1);
    lua_pop(L, 1);
    if (!listed(f)) return;
  }
  bool boundary = false;
  FunctionId callee = cached_id(L, ar, &boundary);
  if (callee == kNoFunction) return;
  FunctionId caller_id = kNoFunction;
  lua_Debug caller;
  if (ar->event == LUA_HOOKCALL && lua_getstack(L, 1, &caller)) {
    bool b = false;
    caller_id = cached_id(L, &caller, &b);
  }
  record_call(callee, caller_id);
}

// ---- Controls -----------------------------------------------------------------------------

void LuaSampler::set_count_list(lua_State* L, int idx) {
  if (active_) return;
  idx = lua_absindex(L, idx);
  count_list_.clear();
  if (lua_isnoneornil(L, idx)) {
    lua_pushnil(L);
  } else {
    lua_createtable(L, 8, 0);  // held for the run: a listed closure keeps its address
    for (lua_Integer i = 1; lua_rawgeti(L, idx, i) != LUA_TNIL; ++i) {
      count_list_.push_back(lua_topointer(L, -1));
      lua_rawseti(L, -2, i);
    }
    lua_pop(L, 1);
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &kCountListKey);
}

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
  critical_ = true;
  current_.store(co, std::memory_order_release);
  update_excluded();
  if (active_) {
    // A pending sample belongs to whatever runs next: move the arm into the coroutine.
    if (armed_.load() == from) disarm();
    if (counting_ && lua_gethook(co) != sampler_hook) take_over_hook(co);  // hooked from C, or before the run
    // An excluded coroutine takes no sample: pending ticks wait for the resumer's next one.
    if (pending_.load() > 0 && !current_excluded_.load()) arm(co, 0);
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
    disarm();
    if (pending_.load() > 0) arm(from, 0);
  }
  critical_ = false;
}

// ---- Embedded in a native host -------------------------------------------------------------

void LuaSampler::sample_now() {
  if (!sampling_ || in_profiler_ || pending_.load(std::memory_order_relaxed) == 0) return;
  in_profiler_ = true;
  timer_.enter_profiler();
  critical_ = true;
  disarm();
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
  disarm();
  from->saved_chain.assign(chain_.begin(), chain_.end());
  chain_.clear();
  for (void* s : to->saved_chain) chain_.push_back(static_cast<lua_State*>(s));
  if (chain_.empty() && to->script) chain_.push_back(static_cast<lua_State*>(to->script));
  // A fiber that runs no Lua of this universe: ticks wait for its zones (sample_now).
  lua_State* running = chain_.empty() ? nullptr : chain_.back();
  current_.store(running, std::memory_order_release);
  update_excluded();
  if (running && active_ && counting_ && lua_gethook(running) != sampler_hook) take_over_hook(running);
  if (running && sampling_ && pending_.load() > 0 && !current_excluded_.load()) arm(running, 0);
  critical_ = false;
}

void LuaSampler::mark_frame() {
  if (!active_) return;  // no run, no frames
  sample_now();  // the ticks so far belong to the frame that ends
  Profile& p = profile();
  p.frame_marks.push_back({current_process(), profile_time()});
}

// lua_newthread copied the creator's hook into the new thread, as it copies a program's hook:
// the new thread gets what it would have had without the profiler (under ours when counting).
void LuaSampler::fix_inherited_hook(lua_State* creator, lua_State* created) {
  if (lua_gethook(created) != sampler_hook) return;
  critical_ = true;
  HostHook inherited{};
  if (armed_.load() == creator) inherited = saved_;
  if (inherited.hook == nullptr || inherited.hook == sampler_hook) inherited = program_hook(creator);
  if (counting_ && active_) {
    if (inherited.hook) program_hooks_[created] = inherited;
    install_counting_hook(created);
  } else {
    lua_sethook(created, inherited.hook, inherited.mask, inherited.count);
  }
  critical_ = false;
}

}  // namespace scriptprof::lua
