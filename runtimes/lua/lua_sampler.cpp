// The Lua adapter's run life cycle, signal path (arm), safe point and sample assembly. The
// engine (core) counts ticks and keeps the profiles; the stack walk, the processes (coroutines,
// fibers), function identity, call counting and the sharing of hooks have files of their own.
#include "lua_sampler.hpp"

#include "lua_registry_keys.hpp"
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
  functions_.learn_c_names(L);
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
        "This Lua's internals match no layout the profiler knows (Lua 5.1-5.3, 5.4.0-5.4.8, "
        "5.5.0): sampled through the public API alone (a program's count hook may drift; ticks in "
        "C functions go to their Lua callers).";
  }
  stacks_move_in_place_ = stack_moves_in_place();
  hook_lookup_enter(this, L);
  counter_.update_quick(counting_);

  // Whatever ran before, L runs now.
  chain_.run(L);
  current_ = L;
  update_excluded();
  if (counting_) {
    counter_.start(L);
    take_over_hook(L, L);
  }
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
    armed_ = nullptr;
    pending_c_ = {};
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

// ---- Signal path ----------------------------------------------------------------------------
//
// Async-signal-safe: it touches only lock-free atomics, the plain HostHook and PendingCFrame
// written before armed_ is published, lua_gethook/lua_gethookmask/lua_gethookcount (field
// reads) and lua_sethook, which the Lua manual names as safe to call from a signal handler, and
// plain reads of fields of the interrupted thread's own state (lua_state_layout.hpp), which
// cannot change while the handler runs on that thread. It never allocates and never walks the
// stack (settraps inside lua_sethook only marks frames).

ArmResult LuaSampler::arm() {
  lua_State* L = current_.load(std::memory_order_acquire);
  if (!L) return ArmResult::Elsewhere;
  if (!stack_settled(L)) return ArmResult::NotNow;  // its frames point into a freed block
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (armed == L) {
    if (still_armed(L)) {
      // Still pending a whole tick later: a C function runs. It may have filled its stack since
      // the arm; if a hook could now fail for want of slots, the arm is taken back.
      if (!hook_has_room(L)) {
        disarm(false);
        engine_.drop_pending();
      } else if (!pending_c_.fn) {
        note_c_frame(L);
      }
      return ArmResult::AlreadyArmed;
    }
    // The program replaced our hook (debug.sethook): keep its hook as the one to restore.
  } else if (armed != nullptr) {
    return ArmResult::Elsewhere;  // armed on another state; it samples when that state runs again
  }
  return arm(L) ? ArmResult::Armed : ArmResult::NotNow;
}

// The timer's thread, while the running state's thread is asleep or blocked in the kernel (a
// sleep, a read, a C function waiting): the first return after it wakes (of the C function that
// blocked, most often) is the safe point, and its sample is the stack that blocked. Only what
// another thread may do: the state's own fields are read (no hook of the program's, none
// running, the stack far from its limit) and its hook fields written, never its frames. With a
// hook of the program's, under call counting or inside the profiler's own work, the ticks wait
// for a signal once it runs (NotNow). A thread that wakes in the microseconds between the
// kernel's word and the writes, and sets a hook, keeps its own: the writes lose (NotNow).
ArmResult LuaSampler::arm_blocked() {
  lua_State* L = current_.load(std::memory_order_acquire);
  if (!L || counting_ || in_profiler_.load(std::memory_order_acquire) || !stack_settled(L)) return ArmResult::NotNow;
  if (armed_.load(std::memory_order_acquire) != nullptr) return ArmResult::AlreadyArmed;
  if (!g_state_layout_verified.load(std::memory_order_acquire) || lua_gethook(L) != nullptr ||
      lua_gethookmask(L) != 0 || lua_status(L) != LUA_OK || hook_running(L) || !verified_stack_far_below_limit(L))
    return ArmResult::NotNow;
  saved_ = HostHook{};
  borrowed_ = false;
  blocked_arm_ = true;
  pending_c_ = {};
  armed_.store(L, std::memory_order_release);  // before the hook: it finds itself armed
  if (set_return_hook_from_outside(L, sampler_hook)) return ArmResult::Armed;
  blocked_arm_ = false;
  armed_.store(nullptr, std::memory_order_release);
  return ArmResult::NotNow;
}

// Signal context, or normal context inside the engine's critical section. Arms L's next safe point; false when it
// did not. Ticks wait (stay pending) while a hook runs or the program's count has just
// restarted; they are dropped and counted when a hook there could not get its stack slots.
bool LuaSampler::arm(lua_State* L) {
  // A hook is running (the program's): no hook can fire inside it, and the instructions it
  // runs would count against our count of 1 instead of the program's countdown. The ticks
  // wait for the next chance after it, which is where the sample would land anyway.
  // Likewise when the program's count has just restarted: its count hook may be about to be
  // called, and arming now would take that call and lose the program's event.
  const int* countdown = (lua_gethookmask(L) & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
  // The program's hook has line or count events, on its own or carried by our counting hook:
  // its events are borrowed (below).
  const bool borrowable = (lua_gethook(L) != sampler_hook || counting_) &&
                          (lua_gethookmask(L) & (LUA_MASKLINE | LUA_MASKCOUNT));
  // A running state whose status is not OK: Lua 5.4.0-5.4.4 run the __close handlers of a
  // coroutine being closed with its status still "yielded", and after a count or line hook Lua
  // takes that status for a yield by the hook and abandons the close. The ticks wait.
  if (lua_status(L) != LUA_OK) return false;
  if (hook_running(L) || (!borrowable && countdown && *countdown == lua_gethookcount(L))) return false;
  // A hook without events, or events without a hook: lua_sethook never leaves either, so the
  // tick came between its writes of the two (the program's debug.sethook, or the host's).
  // Saved now, that half would be restored after the sample in place of what it sets.
  if ((lua_gethook(L) == nullptr) != (lua_gethookmask(L) == 0)) return false;
  if (!hook_has_room(L)) {
    engine_.drop_pending();
    return false;
  }
  int mask = lua_gethookmask(L);
  // Re-arming over our own armed hook keeps the saved one: saving ours as the program's would
  // leave ours behind after the sample, and it removes itself as a stray.
  const bool rearm = still_armed(L);
  if (rearm && borrowed_) return true;  // the program's next event is the safe point already
  if (!rearm) {
    saved_ = hook_of(L);
    const int* left = (mask & LUA_MASKCOUNT) ? hook_countdown(L) : nullptr;
    saved_.countdown = left ? *left : -1;
    note_c_frame(L);
  }
  // The program's own hook has line or count events: borrow its events rather than make ours.
  // Our hook takes its place with its mask and count, its countdown put back as it was, so the
  // next event it would have had (or a call) is the safe point and is passed on to it: it sees
  // every event as unprofiled (a count of ours, restarting, shifted its count events and Lua's
  // line tracking). Under call counting our hook already carries the program's: it stays. Call
  // and return masks keep the older way below (a count of ours, which they do not see).
  arms_.fetch_add(1, std::memory_order_acq_rel);
  if (!rearm && borrowable) {
    borrowed_ = true;
    armed_.store(L, std::memory_order_release);
    set_hook_keeping_countdown(L, sampler_hook, saved_.mask | LUA_MASKCALL, saved_.count);
    return true;
  }
  borrowed_ = false;
  armed_.store(L, std::memory_order_release);
  // COUNT: the next Lua instruction. CALL: a function called (the callee started after the
  // tick, so the sample is the caller's). The host's own events stay. RETURN, in a Lua
  // function: Lua 5.4 sees an outside hook only where an instruction re-reads its trap (calls,
  // loops, returns), so a short leaf with neither ran on unseen and its caller took its ticks;
  // the return event fires in the leaf, with the count event's stack check (hook_has_room).
  // Never on a C function (one returning many values could raise "stack overflow"): the C
  // function a tick finds running is noted instead (note_c_frame).
  int events = saved_.mask & (LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE);
  RunningFrame running = running_frame(L);
  if (running.known && !running.c_function) events |= LUA_MASKRET;
  set_hook(L, sampler_hook, LUA_MASKCOUNT | LUA_MASKCALL | events, 1);
  return true;
}

// Our hook is armed on L, waiting for its safe point: on the program's borrowed events, or on
// a count of ours. (Under call counting our hook is on every thread, with a count when the
// program's hook has one: not armed for that.) Signal-safe: field reads.
bool LuaSampler::still_armed(lua_State* L) const {
  return armed_.load(std::memory_order_acquire) == L && lua_gethook(L) == sampler_hook &&
         (borrowed_ || blocked_arm_ || (lua_gethookmask(L) & LUA_MASKCOUNT));
}

// Lua 5.4.0-5.4.2 grow a stack with realloc and then correct every pointer into it: from the
// realloc until the state's base pointer leaves the old block, its frames lead into freed
// memory. (A later move of the stack, seen or not, also ends the wait.)
bool LuaSampler::stack_settled(lua_State* L) {
  const std::uintptr_t moving = moving_stack_.load(std::memory_order_acquire);
  if (!moving) return true;
  if (moving == kStackInRealloc || reinterpret_cast<std::uintptr_t>(stack_block(L)) == moving) return false;
  moving_stack_.store(0, std::memory_order_relaxed);  // the move is over
  return true;
}

// The C function running on L, if any: the sample taken at the next safe point charges it even
// when it has returned by then.
void LuaSampler::note_c_frame(lua_State* L) {
  RunningFrame f = running_frame(L);
  pending_c_ = f.c_function && f.c_fn ? PendingCFrame{f.c_fn, f.ci} : PendingCFrame{};
}

// Puts back the hook the armed state had. `fired`: called from the armed hook itself, which
// restores the program's instruction countdown (restore_countdown); otherwise the countdown
// the arm found is put back here. Signal context, or normal context inside the engine's critical section.
void LuaSampler::disarm(bool fired) {
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (!armed) return;
  if (lua_gethook(armed) == sampler_hook) {
    if (borrowed_) {
      set_hook_keeping_countdown(armed, saved_.hook, saved_.mask, saved_.count);  // it went on under ours
    } else {
      set_hook(armed, saved_.hook, saved_.mask, saved_.count);
      int* countdown = fired || saved_.countdown <= 0 ? nullptr : hook_countdown(armed);
      if (countdown) *countdown = saved_.countdown;
    }
  }
  if (!fired) pending_c_ = {};
  blocked_arm_ = false;
  armed_.store(nullptr, std::memory_order_release);
}

// From the allocator wrapper: a block as big as a stack near LUAI_MAXSTACK. If it is the armed
// state's stack growing, a hook could now fail for want of slots: take the arm back.
void LuaSampler::on_stack_block(const void* old_block) {
  lua_State* armed = armed_.load(std::memory_order_acquire);
  if (!engine_.sampling() || !armed || !may_be_stack_of(armed, old_block)) return;
  SamplerEngine::ArmMove move(engine_);
  disarm(false);
  engine_.drop_pending();
}

// ---- Hook: the safe point -------------------------------------------------------------------

void LuaSampler::on_hook(lua_State* L, lua_Debug* ar) {
  const int event = ar->event;
  const bool was_in_profiler = in_profiler_;
  in_profiler_ = true;  // allocations of our own bookkeeping are not the program's
  if (counting_ && engine_.sampling() && (event == LUA_HOOKCALL || event == LUA_HOOKTAILCALL) &&
      !engine_.current_excluded()) {
    counter_.count(L, ar);
    // The next call's hook could fail for want of stack slots: step aside until there is room.
    if (!hook_has_room(L) && armed_.load(std::memory_order_acquire) != L) {
      sharing_.lift(L);
      in_profiler_ = was_in_profiler;
      HostHook program = hook_of(L);  // the program's, now restored
      if (program.hook && (program.mask & event_mask(event))) program.hook(L, ar);
      return;
    }
  }

  if (armed_.load(std::memory_order_acquire) == L) {
    HostHook host = saved_;
    const bool borrowed = borrowed_;  // the program's own events: each is passed on as it came
    engine_.enter_sampling();
    // At a call event the callee had not started when the tick came: leave it out. A tail
    // call has replaced the frame that was running: the callee carries on its work.
    take_sample(L, event == LUA_HOOKCALL);
    {
      SamplerEngine::ArmMove move(engine_);
      disarm(true);
    }
    bool count_due = borrowed ? (host.mask & LUA_MASKCOUNT) != 0 : restore_countdown(L, host, event);
    if (counting_ && engine_.active()) sharing_.relift(L);
    engine_.leave_sampling();
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
  // stopped. Put back what the state should have.
  if (counting_ && engine_.active())
    sharing_.install(L, L);
  else
    set_hook(L, nullptr, 0, 0);
}

void LuaSampler::take_sample(lua_State* L, bool skip_leaf) {
  auto [ticks, bytes, since] = engine_.take_pending();
  PendingCFrame c = pending_c_;
  pending_c_ = {};
  if (ticks == 0 && bytes == 0) return;
  if (engine_.current_excluded() && L == current_.load(std::memory_order_relaxed)) {
    engine_.exclude_ticks(ticks);  // armed before the exclusion
    return;
  }
  const void* seek = c.fn ? c.ci : nullptr;
  bool seen = walker_.walk_sample(L, skip_leaf ? 1 : 0, seek);
  // The call's caller is the profiler itself (a tick between starting the timer and calling
  // the profiled function): the callee, about to run, is the best owner of the sample.
  if (skip_leaf && frames_.empty()) seen = walker_.walk_sample(L, 0, seek);
  // The C function the tick found has returned (else the walk met its frame): it is the leaf.
  if (c.fn && !seen) append_c_frame(c.fn);
  if (ticks) record(SampleKind::Time, ticks, since);  // stamped at its first tick (timelines)
  if (bytes) record(SampleKind::Space, bytes);
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

NodeId LuaSampler::record(SampleKind kind, std::uint64_t weight, std::uint64_t at_ns) {
  std::uint32_t process = current_process();
  if (settings_.native_zones && native::current_fiber()->depth > 0) {
    // The zones open on this fiber enclose the Lua stack: they are its outer frames.
    std::vector<FunctionId> zones;
    functions_.zone_frames(*native::current_fiber(), &zones);
    frames_.insert(frames_.begin(), zones.begin(), zones.end());
    lines_.insert(lines_.begin(), zones.size(), 0);
  }
  return at_ns == kNow ? engine_.record(kind, weight, process) : engine_.record(kind, weight, process, at_ns);
}

std::size_t LuaSampler::own_bytes() const {
  return heap_block(sizeof(*this)) + functions_.own_bytes() + counter_.own_bytes() + hash_table_bytes(excluded_) +
         heap_bytes(frames_) + heap_bytes(lines_);
}

}  // namespace scriptprof::lua
