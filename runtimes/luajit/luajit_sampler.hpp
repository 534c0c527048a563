// The LuaJIT 2.1 adapter: the profiler on the engine, sampling with the JIT on.
//
// Sampling path: the engine's tick (signal context) triggers LuaJIT's own profiler hook
// (jit_profiler_bridge.hpp); at the VM's next safe point, compiled code included, LuaJIT calls
// on_safe_point with the VM state the tick found, and the adapter walks the stack with
// lua_getstack/lua_getinfo into the engine's frames. Time the tick found in the garbage
// collector, the JIT compiler or a C function is a (gc), (jit) or (C) leaf frame; a tick in
// compiled code counts toward its function's compiled share.
//
// What differs from the Lua 5.4 adapter, and why:
// - LuaJIT's profiler is one per process and owns a VM hook: a second run, or jit.profile while
//   a run is on, is refused with a reason rather than left half-on.
// - Exact call counts need call hooks, which compiled traces skip: with count_calls the JIT is
//   off for the run (the report header says so) and back on at stop.
// - Coroutines: LuaJIT keeps no link from a coroutine to its resumer, so during a run
//   coroutine.resume and coroutine.wrap are replaced by tracking ones (luajit_coroutines.cpp).
// - GC samples come from a userdata sentinel (LuaJIT finalizes only userdata, as Lua 5.1);
//   allocation samples from a wrapper of LuaJIT's allocator (luajit_space_sampling.cpp).
#pragma once
extern "C" {
#include <lua.h>
}

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit_profiler_bridge.hpp"
#include "luajit_function_table.hpp"
#include "luajit_hook_sharing.hpp"
#include "luajit_tick_arm.hpp"
#include "lua_excluded_processes.hpp"
#include "scriptprof/process_chain.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::luajit {

// The engine's run settings, and what the Lua module passes to every adapter.
struct SamplerSettings : RunSettings {
  bool native_zones = false;     // not on LuaJIT: a host's zones are the Lua 5.4 adapter's
  bool keep_chunk_text = false;  // chunk text for annotation: LuaJIT reads it again from files
};

class LuaJitSampler final : private RuntimeAdapter {
 public:
  // One sampler per LuaJIT VM; `main` is its main thread.
  explicit LuaJitSampler(lua_State* main);
  ~LuaJitSampler() { stop(); }
  LuaJitSampler(const LuaJitSampler&) = delete;
  LuaJitSampler& operator=(const LuaJitSampler&) = delete;
  // The engine this sampler drives: a run's state, its clock and its profiles are asked of it
  // (active(), status(), profile(kind), ...); tests hand it ticks as the timer does.
  SamplerEngine& engine() { return engine_; }
  const SamplerEngine& engine() const { return engine_; }

  // Starts a run on L (running on the calling thread): LuaJIT's profiler hook, the timer, and
  // with count_calls the call hook (JIT off). False with a reason when it cannot start.
  bool start(lua_State* L, const RunSettings& settings, std::string* error);
  // Ends the run: the timer, LuaJIT's profiler and every hook are removed, the JIT's mode is
  // restored, and the functions met take the names under which they are reachable. Idempotent.
  void stop();
  // Resumes collection within a run (Allegro's start-sampling; suspending is engine().suspend()).
  bool resume_sampling(lua_State* L, std::string* error, bool hold_clock = false);
  // Fresh profiles and function caches (not while active); a profile read from a file as the last run.
  void reset();
  void adopt(std::shared_ptr<Profile> profile) { engine_.adopt(std::move(profile)); }

  // Counts calls of the functions in the sequence at `idx` only (nil clears). Not while active.
  void set_count_list(lua_State* L, int idx);
  // Allegro's profile-process-p: an excluded coroutine's ticks are not collected. False, with
  // nothing changed, when the thread cannot be reached (no stack room).
  bool set_process_profiled(lua_State* L, lua_State* thread, bool profiled);
  bool process_profiled(lua_State* thread) const;
  // Identity of the function value at `idx`, if the profile met it.
  bool find_function_value(lua_State* L, int idx, FunctionId* out) { return functions_.find_function_value(L, idx, out); }
  // interpret_closures is not offered on LuaJIT: nothing to push but nil.
  void push_closure(lua_State* L, lua_Integer) { lua_pushnil(L); }
  // The source of a function's chunk ("@file.lua"), if known.
  const std::string* source_of(FunctionId) const { return nullptr; }
  // Bytes the sampler holds besides its profiles.
  std::size_t own_bytes() const;
  // Marks a frame boundary (a game's frame) at the current program time.
  void mark_frame();

  // A call to this C function is the host's own entry (a runner's protected main): stack walks
  // stop below it.
  void add_boundary(lua_CFunction f) { functions_.add_boundary(reinterpret_cast<const void*>(f)); }
  // The profiler's own C functions: never a frame of a sample, never counted.
  void add_own(lua_CFunction f) { functions_.add_own(reinterpret_cast<const void*>(f)); }

  // A coroutine resumer (the coroutine library replacement, or a C host around lua_resume)
  // calls these so that a coroutine's samples sit under the frames that resumed it.
  void enter_coroutine(lua_State* from, lua_State* co);
  void leave_coroutine(lua_State* co, lua_State* from);
  // Whether `co` is one of the resumers of the running coroutine (so it runs, suspended in resume).
  bool resumes(lua_State* co) const { return chain_.index_of(co) != ProcessChain::kNotInChain; }

  // The sampler of L's VM, or nullptr.
  static LuaJitSampler* of(lua_State* L);

  // Brackets a change of the VM's hook: see HookWriteScope.
  class HookWrite : public HookWriteScope {
   public:
    explicit HookWrite(LuaJitSampler& s) : HookWriteScope(s.hook_writes_) {}
  };

  // ---- internal entry points (LuaJIT's callbacks) ----
  void on_safe_point(lua_State* L, int vmstate);
  void on_call(lua_State* L, lua_Debug* ar);
  // luajit_hook_sharing.cpp: the VM's one hook, shared with the program's while counting.
  void on_shared_hook(lua_State* L, lua_Debug* ar);
  bool sharing_hook() const { return engine_.active() && counting_; }  // counting shares the VM's hook
  LuaJitHookSharing& hook_sharing() { return sharing_; }
  void on_gc_cycle(lua_State* L, std::uint32_t run);  // a GC sentinel of run `run` was finalized
  // From the allocator wrapper, for every allocation: the no-sample-due path is inline.
  void on_alloc(std::size_t bytes, const void* block) {
    if (!in_profiler_ && engine_.on_alloc(bytes, block)) arm_for_allocation();
  }
  void on_free(const void* block) { engine_.on_free(block); }
  void on_move(const void* from, const void* to) { engine_.on_move(from, to); }
  lua_Alloc host_alloc() const { return host_alloc_; }
  void* host_alloc_ud() const { return host_alloc_ud_; }

 private:
  Capabilities capabilities() const override;
  TickArm& tick_arm() override { return tick_arm_; }

  // The stack of L and its resumers, root first, into the engine's frames and lines.
  void walk(lua_State* L);
  void mark_listed_counted(lua_State* L);  // luajit_selection.cpp
  void guard_jit_profile(lua_State* L);  // at construction: jit.profile.start refused in a run
  // Whether a coroutine's resumer is found from its frame (at each start, by probes on L: it
  // sets resume_object_); else coroutine.resume and coroutine.wrap are replaced with tracking
  // ones for the run (track_coroutines puts LuaJIT's back). luajit_coroutines.cpp.
  bool find_resumers(lua_State* L);
  void track_coroutines(lua_State* L, bool on);
  // chain_, and the resumers found from the thread told to run down to L (sample_chain_).
  void chain_for_sample(lua_State* L);
  std::uint32_t process_of(lua_State* L);
  void release_run_state();                // the registry lets go of run_state_
  // luajit_space_sampling.cpp
  void new_gc_sentinel(lua_State* L);
  void install_allocator(lua_State* L);
  void remove_allocator(lua_State* L);
  void arm_for_allocation();  // 0: the main thread; coroutines by first sample

  lua_State* main_;                        // the thread the sampler was made on: process 0
  lua_State* run_state_ = nullptr;         // the thread that started the run, held until stop()
  SamplerEngine engine_{this};
  LuaJitFunctionTable functions_{engine_};  // identities and names
  JitProfilerBridge bridge_;
  bool counting_ = false;
  bool jit_was_on_ = true;
  bool line_safe_points_ = false;          // LuaJIT's profiler in 'l' mode (the run's `lines`)
  ProcessChain chain_;                     // the running coroutine and its resumers, as told
  ProcessChain sample_chain_;              // chain_ and the resumers found for a sample
  // LuaJIT's coroutine.resume, as the run's find_resumers verified it; null: our tracking
  // coroutine functions are installed for the run.
  const void* resume_object_ = nullptr;
  std::vector<const void*> count_list_;    // function objects to count (empty: all); held in the registry
  lua::ExcludedProcesses excluded_;        // processes not profiled
  std::uint32_t run_number_ = 0;           // this run's GC sentinels carry it
  // The profiler's own work: its allocations are not sampled, and no arm lands in it (LuaJIT
  // refuses a trigger inside its callback: see arm()).
  std::atomic<bool> in_profiler_{false};
  std::atomic<int> hook_writes_{0};        // HookWrite sections open: no trigger
  LuaJitHookSharing sharing_{engine_, hook_writes_};  // the program's hook beside counting's
  LuaJitTickArm tick_arm_{main_, bridge_, in_profiler_, hook_writes_, counting_};  // the signal path
  lua_Alloc host_alloc_ = nullptr;         // the allocator wrapped (null: not wrapped)
  void* host_alloc_ud_ = nullptr;

  std::unordered_map<lua_State*, std::uint32_t> process_ids_;
  std::vector<FunctionId>& frames_ = engine_.frames();
  std::vector<int>& lines_ = engine_.lines();
};

}  // namespace scriptprof::luajit
