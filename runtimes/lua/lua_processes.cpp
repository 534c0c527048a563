// Which Lua process runs: coroutines entered and left, processes excluded from collection
// (Allegro's profile-process-p), and the fibers and zones of an embedding host. A pending arm
// moves with the running state.
#include "lua_sampler.hpp"

#include "coroutine_tracking.hpp"
#include "lua_registry_keys.hpp"
#include "lua_resume_chain.hpp"

namespace scriptprof::lua {

// ---- Controls -----------------------------------------------------------------------------

bool LuaSampler::set_process_profiled(lua_State* L, lua_State* thread, bool profiled) {
  OwnWork own(*this);
  if (!excluded_.set(L, thread, profiled)) return false;
  // An exclusion is judged at every switch: from now on each is told.
  if (engine_.active() && !tracking_switches_ && needs_switches_told()) track_switches(L, true);
  update_excluded();
  return true;
}

// ---- Which coroutine runs -------------------------------------------------------------------

lua_State* LuaSampler::running_state() const { return running_end(current_.load(std::memory_order_acquire)); }

void LuaSampler::chain_for_sample(lua_State* L) {
  sample_chain_ = chain_;
  extend_chain(sample_chain_, L);
}

// Counting needs our hook on every thread that runs. A thread made while counting inherits it
// from its maker; one made before is given it by the call that resumes it (take_over_called):
// told switches only where that cannot be seen, or a program hook must pass to new threads.
bool LuaSampler::needs_switches_told() const {
  return excluded_.any() || !verify_resume_chain(main_) ||
         (counting_ && (!counter_.sees_switches() || sharing_.program_hooks()));
}

// Where the frames are not read (5.1, a layout not verified) or the counting hook does not tell
// the switch functions apart, through the debug API: the callee, then its first argument or
// upvalue. (Calls of our replacements are not among them: those tell the switch themselves.)
lua_State* LuaSampler::thread_called_by_api(lua_State* L, const lua_Debug* ar) {
  if (!switch_functions_.resume || !lua_checkstack(L, 2)) return nullptr;
  lua_Debug copy = *ar;  // the program's hook gets `ar` next
  lua_getinfo(L, "f", &copy);
  const lua_CFunction f = lua_tocfunction(L, -1);
  lua_State* co = nullptr;
  if (f && (f == switch_functions_.resume || f == switch_functions_.close)) {
    if (lua_getlocal(L, &copy, 1)) {
      co = lua_tothread(L, -1);
      lua_pop(L, 1);
    }
  } else if (f && f == switch_functions_.wrap && lua_getupvalue(L, -1, 1)) {
    co = lua_tothread(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return co;
}

void LuaSampler::take_over_called(lua_State* L, const lua_Debug* ar) {
  const ReleaseCoroutineFunctions& f = switch_functions_;
  lua_State* co = counter_.sees_switches() ? thread_called(L, f.resume, f.close, f.wrap) : thread_called_by_api(L, ar);
  if (co && co != L && lua_gethook(co) != sampler_hook && !sharing_.lifted(L, co)) take_over_hook(L, co);
}

// L runs now (normal context). Installing while a coroutine runs: the chain found on top of
// the one told becomes the one told, as our functions will keep it from now on.
void LuaSampler::track_switches(lua_State* L, bool track) {
  if (track == tracking_switches_) return;
  tracking_switches_ = track;
  if (!track) {
    remove_coroutine_tracking(L);
    return;
  }
  install_coroutine_tracking(L);
  SamplerEngine::ArmMove move(engine_);
  extend_chain(chain_, L);
  if (chain_.running() != L) chain_.run(L);
  current_.store(L, std::memory_order_release);
}

void LuaSampler::armed_thread_freed() {
  SamplerEngine::ArmMove move(engine_);
  arm_.forget_freed();  // its ticks stay pending, for the state that runs now
}

void LuaSampler::update_excluded() {
  lua_State* L = current_.load(std::memory_order_acquire);
  engine_.set_current_excluded(L && excluded_.excluded(L));
}

// ---- Coroutines -----------------------------------------------------------------------------

void LuaSampler::enter_coroutine(lua_State* from, lua_State* co) {
  chain_.enter(from, co);
  // Hooked from C, or before the run: counted from now on (Lua work, before the critical part).
  if (engine_.active() && counting_ && lua_gethook(co) != sampler_hook && !sharing_.lifted(from, co)) take_over_hook(from, co);
  SamplerEngine::ArmMove move(engine_);
  current_.store(co, std::memory_order_release);
  update_excluded();
  if (engine_.active()) {
    // A pending sample belongs to whatever runs next: move the arm into the coroutine.
    if (arm_.armed() == from) arm_.disarm(false, move.context());
    // An excluded coroutine takes no sample: pending ticks wait for the resumer's next one.
    if (engine_.pending_ticks() > 0 && !engine_.current_excluded()) arm_.arm(co, move.context());
  }
}

void LuaSampler::leave_coroutine(lua_State* co, lua_State* from) {
  chain_.leave(co, from);
  SamplerEngine::ArmMove move(engine_);
  current_.store(from, std::memory_order_release);
  update_excluded();
  if (engine_.active() && arm_.armed() == co) {
    arm_.disarm(false, move.context());
    if (engine_.pending_ticks() > 0) arm_.arm(from, move.context());
  }
}

// ---- Embedded in a native host -------------------------------------------------------------

void LuaSampler::sample_now() {
  if (!engine_.sampling() || in_profiler_ || (engine_.pending_ticks() == 0 && engine_.host_ticks() == 0)) return;
  in_profiler_ = true;
  {
    const SamplerEngine::Sampling sampling(engine_);
    record_host_ticks(sampling);
    {
      SamplerEngine::ArmMove move(engine_);
      arm_.disarm(false, move.context());
    }
    std::uint64_t since = engine_.pending_since_ns();  // before the take: this batch's oldest tick
    std::uint64_t ticks = engine_.take_ticks();
    // Lua runs here if the running state is inside a call (the host called into Lua, and Lua
    // into the host function that is changing zones); otherwise only native code ran.
    lua_State* L = running_state();
    lua_Debug ar;
    frames_.clear();
    lines_.clear();
    if (L && lua_status(L) == LUA_OK && lua_getstack(L, 0, &ar)) {
      chain_for_sample(L);
      walker_.walk_sample(L, 0);
    }
    if (engine_.current_excluded())
      engine_.exclude_ticks(ticks);
    else if (ticks)
      record(sampling, SampleKind::Time, ticks, since);
  }
  in_profiler_ = false;
  finish_limit();
}

void LuaSampler::switch_fiber(native::Fiber* from, native::Fiber* to) {
  {
    SamplerEngine::ArmMove move(engine_);
    arm_.disarm(false, move.context());
  }
  chain_.swap_out(&from->saved_chain);
  chain_.swap_in(to->saved_chain, to->script);
  // A fiber that runs no Lua of this universe: ticks wait for its zones (sample_now).
  lua_State* running = static_cast<lua_State*>(chain_.running());
  if (running && engine_.active() && counting_ && lua_gethook(running) != sampler_hook && !sharing_.lifted(running, running))
    take_over_hook(running, running);
  SamplerEngine::ArmMove move(engine_);
  current_.store(running, std::memory_order_release);
  update_excluded();
  if (running && engine_.sampling() && engine_.pending_ticks() > 0 && !engine_.current_excluded()) arm_.arm(running, move.context());
}

void LuaSampler::mark_frame() {
  if (!engine_.active()) return;  // no run, no frames
  sample_now();  // the ticks so far belong to the frame that ends
  engine_.mark_frame(current_process());
}

}  // namespace scriptprof::lua
