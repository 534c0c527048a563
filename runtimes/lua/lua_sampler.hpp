// The Lua adapter (PUC Lua 5.1-5.5): everything that touches the interpreter, as a thin sampler
// composed of parts that each keep their own state:
//   LuaSafePointArm   the signal path: the tick arms the running state's next safe point
//   LuaStackWalker    the sample's frames, up the coroutine chain
//   LuaFunctionTable  function identities and names (LuaChunks: the chunks they come from)
//   LuaCallCounter    exact call counts through the call hook
//   LuaHookSharing    the program's own hooks, kept under ours while calls are counted
//   AllocatorTap      the allocator wrapper and the profiler's arena
// The sampler itself runs the run (start, stop, resume), knows which process runs (coroutines
// found from the frames that resume them, or told by the coroutine library's replacements where
// the run needs every switch, or by a C host's enter_coroutine/leave_coroutine; fibers when
// embedded), takes a sample at the safe point and records it.
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scriptprof/profile.hpp"
#include "scriptprof/process_chain.hpp"
#include "scriptprof/sampler_engine.hpp"
#include "allocator_tap.hpp"
#include "pointer_id_map.hpp"
#include "lua_function_table.hpp"
#include "coroutine_tracking.hpp"
#include "lua_call_counter.hpp"
#include "lua_excluded_processes.hpp"
#include "lua_hook_sharing.hpp"
#include "lua_safe_point_arm.hpp"
#include "lua_stack_walker.hpp"
#include "lua_state_layout.hpp"
#include "zones.hpp"

namespace scriptprof::lua {


// The engine's run settings, and what only the Lua adapter reads.
struct SamplerSettings : RunSettings {
  bool native_zones = false;             // embedded: the running fiber's zones are every sample's
                                         // outer frames, and each fiber is a process
  bool keep_chunk_text = false;          // keep each chunk's text for annotation (source_of)
};

using SampleKind = scriptprof::SampleKind;
using SamplerStatus = scriptprof::RunStatus;

// sampler_hook (lua_hook_sharing.hpp) finds the sampler of L's universe and calls on_hook, or
// removes itself when there is none.
class LuaSampler;
// How the hook finds samplers (sampler_hook.cpp): a sampler made or destroyed invalidates the
// cached answers; a started sampler enters the quick lookup by its universe, and leaves it
// when it is destroyed.
void samplers_changed();
void hook_lookup_enter(LuaSampler* s, lua_State* L);
void hook_lookup_leave(LuaSampler* s);

class LuaSampler final : private RuntimeAdapter {
 public:
  // One sampler per Lua universe; `main` is its main thread.
  explicit LuaSampler(lua_State* main);
  ~LuaSampler();
  LuaSampler(const LuaSampler&) = delete;
  LuaSampler& operator=(const LuaSampler&) = delete;
  // The engine this sampler drives: a run's state, its clock and its profiles are asked of it
  // (active(), status(), profile(kind), ...); tests hand it ticks as the timer does.
  SamplerEngine& engine() { return engine_; }
  const SamplerEngine& engine() const { return engine_; }
  // Lua 5.1 names no main thread: the attach's state stands in until the main one is seen.
  lua_State* main_thread() const { return main_; }
  void set_main_thread(lua_State* main);

  // Brackets the profiler's own work on the state (attach, start, stop, a sample, its records):
  // see OwnWorkScope.
  class OwnWork : public OwnWorkScope {
   public:
    explicit OwnWork(LuaSampler& s) : OwnWorkScope(s.in_profiler_) {}
  };

  // Starts a profiling run on `L` (which must be running on the calling OS thread): call hooks,
  // the allocator wrapper and the GC sentinel as the settings ask, then sampling unless
  // settings.start_sampling is false. Samples add to the current profiles until stop().
  // Returns false with a reason when it cannot start.
  bool start(lua_State* L, const SamplerSettings& settings, std::string* error);
  // Ends the run: stops the timer and removes every hook and wrapper the sampler set. Idempotent.
  void stop();
  // Suspends and resumes collection within a run (Allegro's stop-sampling/start-sampling);
  // suspended time is not profiled time. resume_sampling fails once max_samples was reached;
  // L is the running thread, `hold_clock` as in SamplerSettings.
  // (Suspending is the engine's alone: engine().suspend().)
  bool resume_sampling(lua_State* L, std::string* error, bool hold_clock = false);
  // Bytes of the Lua objects the profiler made (closures, tables, threads), which Lua counts in
  // its heap but which live in the allocator tap's arena, outside the host's.
  std::size_t own_heap_bytes() const { return tap_->arena_bytes(); }

  // Starts fresh profiles (drops samples and the function caches). Not while active.
  void reset();
  // Makes `profile` (e.g. read from a file) the last run, for reports and writers.
  void adopt(std::shared_ptr<Profile> profile);

  // Counts calls of these functions only (the values at list index `idx`, a sequence; nil
  // clears). Far cheaper than counting every call. Not while active.
  void set_count_list(lua_State* L, int idx) {
    if (!engine_.active()) counter_.set_list(L, idx);
  }
  // Allegro's profile-process-p: samples, calls and bytes of an excluded coroutine (or main
  // thread) are not collected. The thread is held while excluded so its identity stays its own.
  // False, with nothing changed, when the thread cannot be reached (no stack room).
  bool set_process_profiled(lua_State* L, lua_State* thread, bool profiled);
  bool process_profiled(lua_State* thread) const { return !excluded_.excluded(thread); }
  // The source of a function's chunk ("@file.lua", or the chunk text when the run kept it:
  // settings.keep_chunk_text), if known.
  const std::string* source_of(FunctionId f) const { return functions_.source_of(f); }
  // Bytes the sampler holds besides its profiles (function identities, chunk records, maps).
  std::size_t own_bytes() const;
  // Pushes closure number `n` of the last run (interpret_closures), or nil. Closures are
  // numbered when their prototype made more than one.
  void push_closure(lua_State* L, lua_Integer n) { functions_.push_closure(L, n); }

  // A call to this C function is the profiler's own entry: stack walks stop below it, and it is
  // never counted as a call.
  void add_boundary(lua_CFunction f) { functions_.add_boundary(reinterpret_cast<const void*>(f)); }
  // Gives a C function a fixed report name.
  void name_c_function(lua_CFunction f, std::string name) {
    functions_.name_c_function(reinterpret_cast<const void*>(f), std::move(name));
  }
  // The profiler's own C functions: never a frame of a sample, never counted.
  void add_own(lua_CFunction f) { functions_.add_own(reinterpret_cast<const void*>(f)); }

  // A C host that resumes coroutines itself calls these around lua_resume(co, from, ...), so
  // samples go to the coroutine that runs. The coroutine library replacements call them too.
  void enter_coroutine(lua_State* from, lua_State* co);
  void leave_coroutine(lua_State* co, lua_State* from);
  // Embedded (settings.native_zones), normal context on the profiled thread, before the zones
  // or the running fiber change: ticks still waiting become a sample now, of the Lua stack if
  // Lua is running there, under the zones open now.
  void sample_now();
  // After a fiber switch: the fiber's own coroutine chain (or its state) runs from now on.
  void switch_fiber(native::Fiber* from, native::Fiber* to);
  // Marks a frame boundary (a game's frame) at the current program time.
  void mark_frame();

  // Called after lua_newthread: a new thread copies its creator's hook, which may be ours.
  void fix_inherited_hook(lua_State* creator, lua_State* created);

  // debug.sethook/gethook (hook_tracking.cpp), called on the running thread L: the program
  // sets L1's hook, and sees the hook it set, whatever hook the profiler has put in its place.
  void set_program_hook(lua_State* L, lua_State* L1, lua_Hook hook, int mask, int count);
  HostHook program_visible_hook(lua_State* L, lua_State* L1);
  // How many arms have set our hook so far: one that comes between two readings may have read
  // hook fields the program was halfway through writing.
  std::uint32_t arms_so_far() const { return arm_.arms_so_far(); }

  // Function identity of the function running at `ar` in `L` (for proc_call_data and friends).
  FunctionId function_of(lua_State* L, lua_Debug* ar) {
    bool boundary = false;
    return functions_.intern(L, ar, &boundary);
  }
  // Function identity of the function value at stack index `idx`, if it was ever seen.
  bool find_function_value(lua_State* L, int idx, FunctionId* out) { return functions_.find_function_value(L, idx, out); }

  // Calls fn(context) when the sampler is destroyed with its state (lua_close), after its
  // run is stopped and its profiles are final. forget_destroy removes it.
  void on_destroy(void (*fn)(void*), void* context) { destroy_listeners_.emplace_back(fn, context); }
  void forget_destroy(void* context) {
    for (std::size_t i = destroy_listeners_.size(); i-- > 0;)
      if (destroy_listeners_[i].second == context) destroy_listeners_.erase(destroy_listeners_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  // The sampler of L's universe, or nullptr.
  static LuaSampler* of(lua_State* L);

  // ---- internal entry points (hook, allocator and finalizer callbacks) ----
  // Lua's hook. `ar` is the program's too (its own hook gets it next): never written here.
  void on_hook(lua_State* L, lua_Debug* ar);
  // The hook's common case under count_calls, inline (lua_counting_hook.hpp): true when the
  // call was counted and nothing else is due; false leaves the event to on_hook.
  bool count_call_quickly(lua_State* L, const lua_Debug* ar);
  void on_stack_block(const void* old_block);  // from the allocator wrapper: a huge block
  // From the allocator wrapper around every reallocation of an existing block: whether it is
  // the running state's stack, moved in place (Lua 5.4.0-5.4.2), whose frames the signal
  // handler must then not read until Lua has put its pointers right (arm: stack_settled).
  bool stack_move_begins(const void* block) {
    return arm_.stack_move_begins(block, current_.load(std::memory_order_relaxed));
  }
  void stack_move_ends(std::uintptr_t old_block, std::uintptr_t new_block) { arm_.stack_move_ends(old_block, new_block); }
  // From the allocator tap, for a block growing during a run: whether it is the stack of the
  // state armed for a sample (the growth is the profiler's, and goes to its arena).
  bool armed_stack(const void* block) const { return arm_.armed_stack(block); }
  // From the allocator wrapper, for every allocation of the program: the common "no sample
  // due" path is inline (through the engine's inline early-outs), so it costs no call.
  void on_alloc(std::size_t bytes, const void* block) {
    if (!in_profiler_ && engine_.on_alloc(bytes, block)) arm_for_allocation();
  }
  void on_free(const void* block) {      // from the allocator wrapper
    engine_.on_free(block);              // a kept block (the in-use heap) goes
    if (counter_.has_ids()) counter_.forget_block(reinterpret_cast<std::uintptr_t>(block));
  }
  // From the allocator wrapper under counting alone: a function object (closure, prototype) was
  // made at `block`, perhaps where a counted one died. (A number: fresh memory, never read.)
  void on_function_made(std::uintptr_t block) {
    if (counter_.has_ids()) counter_.forget_block(block);
  }
  void on_move(const void* from, const void* to) { engine_.on_move(from, to); }  // a realloc moved a block
  void on_gc_cycle(lua_State* L);       // from the GC sentinel's finalizer
  void armed_thread_freed();            // from the allocator tap: the armed thread's block goes

 private:
  // The adapter contract (RuntimeAdapter): the engine's tick arms the running state (arm_).
  Capabilities capabilities() const override;
  TickArm& tick_arm() override { return arm_; }
  void take_sample(const SamplerEngine::Sampling& sampling, lua_State* L, bool skip_leaf);
  void append_c_frame(const void* fn);
  void record_host_ticks(const SamplerEngine::Sampling& sampling);
  // Records the walked frames_ into one profile (under the zones open, when embedded).
  static constexpr std::uint64_t kNow = UINT64_MAX;
  NodeId record(const SamplerEngine::Sampling& sampling, SampleKind kind, std::uint64_t weight,
                std::uint64_t at_ns = kNow);  // stamped at_ns or now
  void install_space_hooks(lua_State* L);
  void remove_space_hooks();
  void new_gc_sentinel(lua_State* L);
  void arm_for_allocation();                        // an allocation sample is due
  void update_excluded();
  // The state running Lua code now: the one told, or the coroutine running on top of it.
  lua_State* running_state() const;
  // chain_, and the coroutines running on top of it up to L, for L's sample (sample_chain_).
  void chain_for_sample(lua_State* L);
  // Whether the run needs every coroutine switch told (counting, excluded processes, or a Lua
  // whose resume frames cannot be read), and installs or removes our coroutine library.
  bool needs_switches_told() const;
  void track_switches(lua_State* L, bool track);
  void finish_limit();                              // suspends and warns when max_samples was reached
  std::uint32_t current_process();                  // fills the profiles' thread list as needed

  // A program hook is kept on some thread (L runs): the hook passes every event on, and every
  // switch is told, so that a new thread gets its maker's program hook.
  void note_program_hooks(lua_State* L) {
    sharing_.note_program_hook();
    counter_.bar_quick();
    if (engine_.active() && !tracking_switches_ && needs_switches_told()) track_switches(L, true);
  }
  // Our counting hook on `thread`, over a hook the program had set there.
  void take_over_hook(lua_State* L, lua_State* thread) {
    if (sharing_.take_over(L, thread)) note_program_hooks(L);
  }
  // At a call event under counting: the thread the callee will resume or close gets our hook.
  void take_over_called(lua_State* L, const lua_Debug* ar);
  lua_State* thread_called_by_api(lua_State* L, const lua_Debug* ar);

  // The run and what it runs on.
  lua_State* main_;                                // main thread of the universe
  SamplerEngine engine_;                           // run state, ticks, budget, profiles
  SamplerSettings settings_;
  bool counting_ = false;                          // the run counts calls: our hook on every thread
  AllocatorTap* const tap_;                        // our place in the allocator chain (orphaned at the end)
  // The profiler's own work: not sampled, no blocked arm lands in it (atomic: arm_blocked reads
  // it on the timer's thread), and its blocks go to the arena. The tap's flag, beside what every
  // allocation reads.
  std::atomic<bool>& in_profiler_;
  // Which process runs: shared with the signal handler (lock-free).
  std::atomic<lua_State*> current_{nullptr};       // the state running Lua code now
  ProcessChain chain_;                             // the running coroutine and its resumers, as told
  ProcessChain sample_chain_;                      // chain_ and what a sample found on top of it
  bool tracking_switches_ = false;                 // our coroutine library: every switch is told
  ReleaseCoroutineFunctions switch_functions_;     // counting: the release's resume, close and
                                                   // wrap function (take_over_called)
  ExcludedProcesses excluded_;                     // processes not profiled
  std::vector<FunctionId>& frames_ = engine_.frames();  // the engine's sinks for one walk:
  std::vector<int>& lines_ = engine_.lines();           // functions and current lines
  std::vector<std::pair<void (*)(void*), void*>> destroy_listeners_;

  // The parts, each with its own state (declared after what they are given).
  LuaFunctionTable functions_{engine_};                                  // identities and names
  LuaHookSharing sharing_{engine_, in_profiler_};                        // the program's hooks
  LuaCallCounter counter_{engine_, functions_, sharing_, in_profiler_};  // exact calls
  LuaSafePointArm arm_{current_, counting_, in_profiler_, tap_->armed_block()};  // the signal path
  LuaStackWalker walker_{functions_, sample_chain_, frames_, lines_};           // the sample's frames
};

}  // namespace scriptprof::lua
