// The Lua adapter's run life cycle, signal path (arm), safe point and sample assembly. The
// engine (core) counts ticks and keeps the profiles; the stack walk, the processes (coroutines,
// fibers), function identity, call counting and the sharing of hooks have files of their own.
#include "lua_sampler.hpp"

#include "lua_registry_keys.hpp"
#include "lua_resume_chain.hpp"
#include "scriptprof/heap_bytes.hpp"

extern "C" {
#include <lauxlib.h>
}

#include <algorithm>
#include <cstdio>

namespace scriptprof::lua {

namespace {

int event_mask(int event) {
  switch (event) {
    case LUA_HOOKCALL:
    case LUA_HOOKTAILCALL:
      return LUA_MASKCALL;
    case LUA_HOOKRET:
#ifdef LUA_HOOKTAILRET
    case LUA_HOOKTAILRET:  // 5.1
#endif
      return LUA_MASKRET;
    case LUA_HOOKLINE:
      return LUA_MASKLINE;
    default:
      return LUA_MASKCOUNT;
  }
}

}  // namespace

// ---- Life cycle ---------------------------------------------------------------------------

LuaSampler::LuaSampler(lua_State* main)
    : main_(main), engine_(this), tap_(AllocatorTap::attach(main, this)), in_profiler_(tap_->own_work()) {
  OwnWork own(*this);
  lua_pushlightuserdata(main, this);
  lua_rawsetp(main, LUA_REGISTRYINDEX, &kSamplerKey);
  samplers_changed();
}

LuaSampler::~LuaSampler() {
  stop();
  for (auto [fn, context] : destroy_listeners_) fn(context);
  lua_pushnil(main_);
  lua_rawsetp(main_, LUA_REGISTRYINDEX, &kSamplerKey);
  hook_lookup_leave(this);
  tap_->orphan();  // it stays in the chain: the state frees the blocks in its arena later
}

LuaSampler* LuaSampler::of(lua_State* L) {
  // Every coroutine switch asks (coroutine_tracking.cpp): the tap knows its sampler, the same
  // one the registry names (both set at attach and cleared when the sampler goes). The registry
  // still answers when a host wrapped the allocator after attach.
  if (LuaSampler* s = AllocatorTap::heading_sampler(L)) return s;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &kSamplerKey);
  auto* s = static_cast<LuaSampler*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return s;
}

void LuaSampler::reset() {
  if (engine_.active()) return;
  engine_.reset();
  functions_.reset(main_);
}

void LuaSampler::adopt(std::shared_ptr<Profile> profile) {
  reset();
  engine_.adopt(std::move(profile));
}

Capabilities LuaSampler::capabilities() const {
  Capabilities c;
  c.runtime = LUA_RELEASE;
  c.signal_arm = true;    // lua_sethook is documented as safe in a signal handler
  c.blocked_arm = true;   // a return hook set from the timer's thread (arm_blocked)
  c.call_events = true;   // call hooks
  c.alloc_events = true;  // the allocator wrapper
  c.gc_events = true;     // the __gc sentinel
  c.free_events = true;   // the allocator tap sees every free and realloc
  return c;
}

void LuaSampler::set_main_thread(lua_State* main) {
  main_ = main;
  tap_->set_main_thread(main);
}

bool LuaSampler::start(lua_State* L, const SamplerSettings& settings, std::string* error) {
  OwnWork own(*this);
  const bool listed_only = !settings.count_calls && counter_.has_list();
  if (!engine_.start(settings, settings.count_calls || listed_only, error, listed_only)) return false;
  settings_ = settings;
  counting_ = engine_.counting();
  functions_.configure(settings.interpret_closures, settings.keep_chunk_text);
  // Once per process. A Lua whose structs match no layout the module knows is sampled through
  // the public API alone, and the profile says so.
  if (verify_state_layout(L)) {
    engine_.profile().health.internals = std::string("Lua ") + verified_layout();
    if (!layout_reads_frames())
      engine_.profile().runtime_note =
          "Lua 5.1's frames are not read while it runs: ticks in C functions go to their Lua callers.";
  } else {
    engine_.profile().health.internals = "public API only";
    engine_.profile().runtime_note =
        std::string(internals_turned_off()
                        ? "Reading Lua's internals is off (SCRIPTPROF_LUA_INTERNALS=off)"
                        : "This Lua's internals match no layout the profiler knows (Lua 5.1-5.3, 5.4.0-5.4.8, 5.5.0)") +
        ": sampled through the public API alone (a program's count hook may drift; ticks in C functions go to "
        "their Lua callers).";
  }
  arm_.clear(stack_moves_in_place());
  hook_lookup_enter(this, L);
  // Every switch told only where the run needs it; else the running coroutine is found from
  // the frames that resume it, and nothing of ours is on the switch path.
  verify_resume_chain(L);
  if (lua_CFunction wrap = release_wrap_function()) name_c_function(wrap, "coroutine.wrap (function)");

  // Whatever ran before, L runs now.
  chain_.run(L);
  current_ = L;
  update_excluded();
  if (counting_) {
    counter_.start(L, settings.interpret_closures);
    // The wrap function: the resume chain's (asked once a process), else asked of the release.
    const ReleaseCoroutineFunctions release = release_coroutine_functions(L);
    lua_CFunction wrapped = release_wrap_function();
    if (!wrapped && release.wrap) wrapped = wrapped_by(L, release.wrap);
    switch_functions_ = {release.resume, release.close, wrapped};
    counter_.set_switch_functions(switch_functions_);
  }
  // Before our hook goes on: the program's hook on L, which ours will keep, sees no event of
  // the library's replacement.
  const lua_Hook program_hook = lua_gethook(L);
  if (needs_switches_told() || (counting_ && program_hook && program_hook != sampler_hook)) track_switches(L, true);
  functions_.learn_c_names(L);  // (our coroutine functions too, when installed)
  if (counting_) take_over_hook(L, L);
  counter_.update_quick(counting_);
  install_space_hooks(L);
  if (settings.start_sampling && !resume_sampling(L, error, settings.hold_clock)) {
    stop();
    return false;
  }
  return true;
}

bool LuaSampler::resume_sampling(lua_State* L, std::string* error, bool hold_clock) {
  if (engine_.active() && !engine_.sampling()) {
    // Before the timer can tick: L runs now (the chain may name a coroutine that has ended
    // since it was suspended).
    arm_.clear();
    chain_.run(L);
    current_ = L;
    update_excluded();
  }
  return engine_.resume(error, hold_clock);
}


void LuaSampler::stop() {
  if (!engine_.active()) return;
  OwnWork own(*this);
  engine_.suspend();
  if (counting_) {
    // Threads the program hooked get their hooks back (restore_all); the running
    // thread and the main one lose ours now; the others drop it at their next event
    // (on_hook), or are already gone.
    lua_State* running = current_.load();
    for (lua_State* thread : {running, main_})
      if (thread && lua_gethook(thread) == sampler_hook) set_hook(thread, nullptr, 0, 0);
    sharing_.restore_all(main_);
    counter_.update_quick(counting_);
    counter_.finish(main_);
  }
  remove_space_hooks();
  track_switches(main_, false);
  functions_.qualify_names(main_);
  engine_.stop();  // inactive: the GC sentinel sees this and lets itself go
}

void LuaSampler::finish_limit() {
  if (!engine_.finish_limit()) return;
  // Standard error, once per run: Lua's own warnings are off unless the program turns them on,
  // and a profile that silently covers only the start of a run misleads.
  std::fprintf(stderr, "profiler: max_samples (%llu) reached: collection stopped, the profile covers the run until then\n",
               static_cast<unsigned long long>(settings_.max_samples));
}

// ---- Signal path: LuaSafePointArm (lua_safe_point_arm.cpp) ---------------------------------

void LuaSampler::on_stack_block(const void* old_block) {
  if (!engine_.sampling()) return;
  SamplerEngine::ArmMove move(engine_);
  arm_.stack_block_grew(old_block, move.context());
}

// ---- Hook: the safe point -------------------------------------------------------------------

void LuaSampler::on_hook(lua_State* L, lua_Debug* ar) {
  const int event = ar->event;
  const bool was_in_profiler = in_profiler_;
  in_profiler_ = true;  // allocations of our own bookkeeping are not the program's
  if (counting_ && engine_.sampling() && (event == LUA_HOOKCALL || event == LUA_HOOKTAILCALL) &&
      !engine_.current_excluded()) {
    counter_.count(L, ar);
    take_over_called(L, ar);
    // The next call's hook could fail for want of stack slots: step aside until there is room.
    if (!hook_has_room(L) && arm_.armed() != L) {
      sharing_.lift(L);
      in_profiler_ = was_in_profiler;
      HostHook program = hook_of(L);  // the program's, now restored
      if (program.hook && (program.mask & event_mask(event))) program.hook(L, ar);
      return;
    }
  }

  if (arm_.armed() == L) {
    HostHook host = arm_.saved();
    const bool borrowed = arm_.borrowed();  // the program's own events: each is passed on as it came
    bool count_due;
    {
      const SamplerEngine::Sampling sampling(engine_);
      // At a call event the callee had not started when the tick came: leave it out. A tail
      // call has replaced the frame that was running: the callee carries on its work.
      take_sample(sampling, L, event == LUA_HOOKCALL);
      {
        SamplerEngine::ArmMove move(engine_);
        arm_.disarm(true, move.context());
      }
      count_due = borrowed ? (host.mask & LUA_MASKCOUNT) != 0 : LuaSafePointArm::restore_countdown(L, host, event);
      if (counting_ && engine_.active()) sharing_.relift(L);
    }
    in_profiler_ = was_in_profiler;
    finish_limit();
    // The program's hook gets the events it asked for: this one, unless it is our count event.
    HostHook program = host.hook != sampler_hook ? host : sharing_.program_hook(L, L);
    bool wanted = event == LUA_HOOKCOUNT ? count_due : (program.mask & event_mask(event)) != 0;
    if (program.hook && program.hook != sampler_hook && wanted) program.hook(L, ar);
    return;
  }
  in_profiler_ = was_in_profiler;
  if (counting_ && engine_.active()) {
    // Our counting hook: pass the events the program's own hook asked for.
    if (sharing_.program_hooks()) {
      HostHook program = sharing_.program_hook(L, L);
      if (program.hook && (program.mask & event_mask(event))) program.hook(L, ar);
      if (lua_gethookmask(L) == (LUA_MASKCALL | program.mask)) return;
    } else if (lua_gethookmask(L) == LUA_MASKCALL) {
      return;
    }
  }
  // A stray hook: copied into a new thread by lua_newthread, or left after the profiler
  // stopped. Put back what the state should have: under counting, ours over the program's;
  // else the hook its creator had under the arm, which lua_newthread would have copied (the
  // creator is the state armed last: a thread is made inside the C function the arm waits out).
  if (counting_ && engine_.active()) {
    sharing_.install(L, L);
  } else {
    const HostHook& h = arm_.last_restored();
    set_hook(L, h.hook, h.mask, h.count);
  }
}

void LuaSampler::take_sample(const SamplerEngine::Sampling& sampling, lua_State* L, bool skip_leaf) {
  record_host_ticks(sampling);  // the host's time since the last sample first
  auto [ticks, bytes, since] = engine_.take_pending();
  const LuaSafePointArm::PendingCFrame c = arm_.take_pending_c();
  if (ticks == 0 && bytes == 0) return;
  if (engine_.current_excluded() && L == current_.load(std::memory_order_relaxed)) {
    engine_.exclude_ticks(ticks);  // armed before the exclusion
    return;
  }
  const void* seek = c.fn ? c.ci : nullptr;
  chain_for_sample(L);
  bool seen = walker_.walk_sample(L, skip_leaf ? 1 : 0, seek);
  // The call's caller is the profiler itself (a tick between starting the timer and calling
  // the profiled function): the callee, about to run, is the best owner of the sample.
  if (skip_leaf && frames_.empty()) seen = walker_.walk_sample(L, 0, seek);
  // The C function the tick found has returned (else the walk met its frame): it is the leaf.
  if (c.fn && !seen) append_c_frame(c.fn);
  if (ticks) record(sampling, SampleKind::Time, ticks, since);  // stamped at its first tick (timelines)
  if (bytes) record(sampling, SampleKind::Space, bytes);
}

// The ticks that fell due while the host's own code ran (no Lua function active): "(host)", or
// the zones the host has open, which no change has closed since (a change samples first).
void LuaSampler::record_host_ticks(const SamplerEngine::Sampling& sampling) {
  const SamplerEngine::HostTicks host = engine_.take_host_ticks();
  if (!host.ticks) return;
  frames_.clear();
  lines_.clear();
  if (!settings_.native_zones || native::current_fiber()->depth == 0) {
    frames_.push_back(engine_.host_function());
    lines_.push_back(0);
  }
  record(sampling, SampleKind::Time, host.ticks, host.since_ns);
  frames_.clear();
  lines_.clear();
}

void LuaSampler::append_c_frame(const void* fn) {
  // The signal handler's reading may be a result being moved over the function's slot.
  if (!functions_.credible_c_function(fn)) return;
  frames_.push_back(functions_.c_function_id(fn, nullptr));
  lines_.push_back(0);
}

std::uint32_t LuaSampler::current_process() {
  if (!settings_.native_zones) return 0;
  const native::Fiber& f = *native::current_fiber();
  engine_.name_process(f.process, f.name, native::host_thread_of(f));
  return f.process;
}

NodeId LuaSampler::record(const SamplerEngine::Sampling& sampling, SampleKind kind, std::uint64_t weight,
                          std::uint64_t at_ns) {
  std::uint32_t process = current_process();
  if (settings_.native_zones && native::current_fiber()->depth > 0) {
    // The zones open on this fiber enclose the Lua stack: they are its outer frames.
    std::vector<FunctionId> zones;
    functions_.zone_frames(*native::current_fiber(), &zones);
    frames_.insert(frames_.begin(), zones.begin(), zones.end());
    lines_.insert(lines_.begin(), zones.size(), 0);
  }
  return at_ns == kNow ? sampling.record(kind, weight, process) : sampling.record(kind, weight, process, at_ns);
}

std::size_t LuaSampler::own_bytes() const {
  return heap_block(sizeof(*this)) + functions_.own_bytes() + counter_.own_bytes() + excluded_.own_bytes() +
         heap_bytes(frames_) + heap_bytes(lines_);
}

}  // namespace scriptprof::lua
