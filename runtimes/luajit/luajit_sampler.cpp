#include "luajit_sampler.hpp"

extern "C" {
#include <lauxlib.h>
#include <luajit.h>
}

#include <algorithm>
#include <cstdio>

namespace scriptprof::luajit {

namespace {

// LuaJIT's profiler and its hook are one per process: so is the sampler they call.
std::atomic<LuaJitSampler*> g_sampler{nullptr};

void profile_callback(void* data, lua_State* L, int /*samples*/, int vmstate) {
  static_cast<LuaJitSampler*>(data)->on_safe_point(L, vmstate);
}

// jit.profile.start from the moment the profiler is loaded: LuaJIT's own, refused while a run
// is on (LuaJIT has one profiler per process, and its start would silently stop ours). It stays
// installed between runs, so that a program that keeps jit.profile.start in a local is guarded
// too (unless it took it before loading the profiler).
int guarded_jit_profile_start(lua_State* L) {
  if (LuaJitSampler::of(L))
    return luaL_error(L, "jit.profile cannot start while scriptprof is profiling (LuaJIT has one profiler per process)");
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// jit.status(): whether the JIT compiler is on.
bool jit_on(lua_State* L) {
  const int top = lua_gettop(L);
  bool on = false;
  lua_getglobal(L, "jit");
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "status");
    if (lua_type(L, -1) == LUA_TFUNCTION && lua_pcall(L, 0, 1, 0) == 0) on = lua_toboolean(L, -1);
  }
  lua_settop(L, top);
  return on;
}

}  // namespace

LuaJitSampler::LuaJitSampler(lua_State* main) : main_(main) { guard_jit_profile(main); }

LuaJitSampler* LuaJitSampler::of(lua_State*) { return g_sampler.load(std::memory_order_relaxed); }

Capabilities LuaJitSampler::capabilities() const {
  Capabilities c;
  c.runtime = LUAJIT_VERSION;
  // arm() triggers LuaJIT's own SIGPROF handler; arm_blocked() the same from the timer's thread
  // while the VM's thread is blocked, under the conditions it gives.
  c.signal_arm = true;
  c.blocked_arm = true;
  c.call_events = true;   // call hooks, with the JIT off for the run
  c.gc_events = true;     // a finalized sentinel per cycle (luajit_space_sampling.cpp)
  c.free_events = true;   // the allocator wrapper sees every free and realloc
  c.gc_time = true;       // the VM state at a tick: the collector's samples are (gc)
  c.alloc_events = true;  // a wrapper of LuaJIT's allocator (the same file)
  return c;
}

bool LuaJitSampler::start(lua_State* L, const RunSettings& settings, std::string* error) {
  LuaJitSampler* none = nullptr;
  if (!g_sampler.compare_exchange_strong(none, this) && none != this) {
    *error = "another LuaJIT state of this process is being profiled (LuaJIT has one profiler per process)";
    return false;
  }
  if (settings.interpret_closures) {
    *error = "interpret_closures is not available on LuaJIT: its closures are told apart by their prototype only";
    g_sampler = nullptr;
    return false;
  }
  const bool listed_only = !settings.count_calls && !count_list_.empty();
  if (!engine_.start(settings, settings.count_calls || listed_only, error, listed_only)) {
    g_sampler = nullptr;
    return false;
  }
  counting_ = engine_.counting();
  chain_.run(L);
  // The thread that started the run does stop()'s work (LuaJIT's hooks, allocator and profiler
  // are the VM's, so any live thread will do): it is held in the registry until then, since it
  // may be a coroutine that ends before the run does.
  run_state_ = L;
  lua_pushthread(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "scriptprof.run_state");
  // 'f': safe points where a trace enters or leaves a function (and in the interpreter at
  // calls), where a tick is charged to the right function, at the least cost. 'l', asked with
  // `lines`: at every line as well, so the running line is exact and a tick in a long loop is
  // taken in that loop, not at the function's return; on line-dense compiled code each line's
  // check costs (1.6x on our hash program at 1 Hz, against 1.07 for 'f').
  // LuaJIT's profiler runs for the whole run: its safe points take the samples, and its stack
  // dump names C frames without pushing on a stack that may be at its limit.
  line_safe_points_ = settings.lines;
  if (!bridge_.start(L, line_safe_points_ ? 'l' : 'f', profile_callback, this, error)) {
    release_run_state();
    engine_.stop();
    g_sampler = nullptr;
    return false;
  }
  // Resumers are found from their frames; where that is not verified, every switch is told.
  if (!find_resumers(L)) track_coroutines(L, true);
  functions_.learn_library_names(L);  // the tracking coroutine.resume and wrap included
  ++run_number_;
  // A served run that keeps its heap needs both (the engine set its interval).
  if (engine_.needs_gc_cycles()) new_gc_sentinel(L);
  if (engine_.settings().alloc_bytes) install_allocator(L);
  if (counting_) {
    // Compiled traces skip hooks: counted calls need the interpreter.
    jit_was_on_ = jit_on(L);
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    sharing_.share(L, true);
    engine_.profile().runtime_note = "The JIT was off for this run: calls were counted through hooks, which compiled code skips.";
  } else {
    sharing_.guard_sethook(L, true);
  }
  if (settings.start_sampling && !engine_.resume(error, settings.hold_clock)) {
    stop();
    return false;
  }
  return true;
}

void LuaJitSampler::stop() {
  if (!engine_.active()) return;
  engine_.suspend();
  lua_State* L = run_state_;
  bridge_.stop(L);
  remove_allocator(L);
  if (!resume_object_) track_coroutines(L, false);
  if (counting_) {
    sharing_.share(L, false);
    if (jit_was_on_) luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_ON);
    if (!count_list_.empty()) mark_listed_counted(L);
  } else {
    sharing_.guard_sethook(L, false);
  }
  functions_.qualify_names(L);
  release_run_state();
  engine_.stop();
  g_sampler = nullptr;
}

void LuaJitSampler::release_run_state() {
  lua_pushnil(run_state_);
  lua_setfield(run_state_, LUA_REGISTRYINDEX, "scriptprof.run_state");
}

void LuaJitSampler::on_safe_point(lua_State* L, int vmstate) {
  tick_arm_.fired();
  if (!engine_.sampling() || in_profiler_ ||
      (engine_.pending_ticks() == 0 && engine_.pending_bytes() == 0 && !engine_.wake_armed()))
    return;
  if (!process_profiled(L)) {  // Allegro's profile-process-p: not collected
    engine_.exclude_ticks(engine_.take_pending().ticks);
    return;
  }
  in_profiler_ = true;
  if (counting_) sharing_.relift_if_shallow(L);
  {
    const SamplerEngine::Sampling sampling(engine_);
    const PendingWeight w = engine_.take_pending();
    // A wake armed with no tick brings nothing: take_pending() has aimed the timer, no stack is walked.
    if (w.ticks || w.bytes) {
      walk(L);
      const std::uint32_t process = process_of(L);
      if (w.bytes) sampling.record(SampleKind::Space, w.bytes, process);
      if (w.ticks) {
        // The VM state the tick found: the collector, the compiler and C code are frames of their
        // own, under the Lua code that was running when they ran. (LuaJIT calls back after a C
        // function returned: which one ran is gone, but its time is not its Lua caller's own.)
        // LuaJIT tells the state of the first tick only: its handler notes it as it sets the
        // hook, and the ticks after find the hook set. The compiler runs for microseconds, then
        // the trace it made runs on to the next safe point: in 'f' mode the next call or return,
        // a compiled loop's whole length (a 0.2 s loop whose first tick fell in its own compile
        // came out all "(jit)"). So the compiler has one tick, and the rest are compiled code's.
        const bool compiler = vmstate == 'J';
        const std::uint64_t first = compiler ? 1 : w.ticks;
        if (vmstate == 'G' || compiler || vmstate == 'C') {
          using Pseudo = LuaJitFunctionTable::Pseudo;
          frames_.push_back(functions_.pseudo(vmstate == 'G' ? Pseudo::Gc : compiler ? Pseudo::Jit : Pseudo::CCode));
          lines_.push_back(0);
        }
        const NodeId leaf = sampling.record(SampleKind::Time, first, process, w.since_ns);
        if (!frames_.empty() && leaf != kNoNode) engine_.add_jit_share(leaf, first, vmstate == 'N');
        if (w.ticks > first) {
          frames_.pop_back();
          lines_.pop_back();
          const NodeId rest = sampling.record(SampleKind::Time, w.ticks - first, process);
          if (!frames_.empty() && rest != kNoNode) engine_.add_jit_share(rest, w.ticks - first, true);
        }
      }
    }
  }
  in_profiler_ = false;
  if (engine_.finish_limit())
    std::fprintf(stderr, "profiler: max_samples (%llu) reached: collection stopped, the profile covers the run until then\n",
                 static_cast<unsigned long long>(engine_.settings().max_samples));
}

bool LuaJitSampler::resume_sampling(lua_State* L, std::string* error, bool hold_clock) {
  if (engine_.active() && !engine_.sampling()) chain_.run(L);
  return engine_.resume(error, hold_clock);
}

void LuaJitSampler::reset() {
  if (engine_.active()) return;
  engine_.reset();
  functions_.reset();
  process_ids_.clear();
}

void LuaJitSampler::on_call(lua_State* L, lua_Debug* ar) {
  if (!engine_.sampling() || !process_profiled(L)) return;
  if (!count_list_.empty()) {  // Allegro's count list: the listed functions only
    lua_getinfo(L, "f", ar);
    const void* fn = lua_topointer(L, -1);
    lua_pop(L, 1);
    if (std::find(count_list_.begin(), count_list_.end(), fn) == count_list_.end()) return;
  }
  bool boundary = false;
  functions_.new_stack();  // a stack dump only if the callee or its caller is a C function
  const FunctionId callee = functions_.intern(L, ar, 0, &boundary, 2);
  if (callee == kNoFunction) return;
  FunctionId caller = kNoFunction;
  lua_Debug up;
  if (lua_getstack(L, 1, &up)) caller = functions_.intern(L, &up, 1, &boundary, 2);
  engine_.record_call(callee, caller);
}

// The VM's hook while calls are counted: ours on a call (unless the stack is too deep for it),
// then the program's on the events it asked for.
void LuaJitSampler::on_shared_hook(lua_State* L, lua_Debug* ar) {
  if (ar->event == LUA_HOOKCALL && !sharing_.lift_if_deep(L, ar)) {
    lua_Debug mine = *ar;  // on_call's lua_getinfo fills fields the program's hook must not see
    on_call(L, &mine);
  }
  sharing_.pass_to_program(L, ar);
}

void LuaJitSampler::walk(lua_State* L) {
  frames_.clear();
  lines_.clear();
  chain_for_sample(L);
  std::size_t idx = sample_chain_.index_of(L);
  lua_State* s = L;
  for (;;) {
    functions_.new_stack();  // each thread's stack dump is made afresh
    lua_Debug ar;
    for (int level = 0; lua_getstack(s, level, &ar); ++level) {
      bool boundary = false;
      const FunctionId id = functions_.intern(s, &ar, level, &boundary);
      if (boundary) goto done;
      if (id == kNoFunction) continue;  // the profiler's own function
      frames_.push_back(id);
      // The running function's line is where a function-level safe point fired (its entry or
      // return), not where the time went: unknown. Its callers' lines are their calls.
      const bool running_line = s == L && frames_.size() == 1 && !line_safe_points_;
      lines_.push_back(ar.currentline > 0 && !running_line ? ar.currentline : 0);
    }
    if (idx == ProcessChain::kNotInChain || idx == 0) break;
    s = static_cast<lua_State*>(sample_chain_.at(--idx));
  }
done:
  std::reverse(frames_.begin(), frames_.end());
  std::reverse(lines_.begin(), lines_.end());
}

void LuaJitSampler::enter_coroutine(lua_State* from, lua_State* co) {
  SamplerEngine::ArmMove move(engine_);
  chain_.enter(from, co);
}

void LuaJitSampler::leave_coroutine(lua_State* co, lua_State* from) {
  SamplerEngine::ArmMove move(engine_);
  chain_.leave(co, from);
}

void LuaJitSampler::mark_frame() {
  if (!engine_.active()) return;
  engine_.mark_frame(0);
}

// The program's jit.profile.start is kept in the registry while a run replaces it.
void LuaJitSampler::guard_jit_profile(lua_State* L) {
  const int top = lua_gettop(L);
  lua_getglobal(L, "require");  // loaded now, so that a later require finds it guarded
  lua_pushstring(L, "jit.profile");
  if (lua_isfunction(L, -2) && lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
    lua_getfield(L, -1, "start");
    if (lua_isfunction(L, -1) && lua_tocfunction(L, -1) != guarded_jit_profile_start) {
      lua_pushcclosure(L, guarded_jit_profile_start, 1);
      lua_setfield(L, -2, "start");
    }
  }
  lua_settop(L, top);
}
std::uint32_t LuaJitSampler::process_of(lua_State* L) {
  if (L == main_) return 0;
  auto [it, added] = process_ids_.emplace(L, static_cast<std::uint32_t>(process_ids_.size() + 1));
  if (added) engine_.name_process(it->second, "coroutine " + std::to_string(it->second), 0);
  return it->second;
}

}  // namespace scriptprof::luajit
