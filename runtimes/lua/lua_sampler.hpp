// The Lua 5.4 adapter: everything that touches the interpreter.
//
// Sampling path: the core timer's tick (signal context) arms a count hook with lua_sethook on
// the state that is running (Lua documents that call as safe in a signal handler); at the
// next instruction, or at the return of a long C function, the hook walks the stack into the
// core's frames, records one sample carrying every tick since the last one, and restores the
// host's own hook. Coroutines: the tracking replacements of coroutine.create/resume/wrap (or a
// C host through enter_coroutine/leave_coroutine) say which state runs, and a coroutine's
// frames are stitched under its resumer's.
#pragma once
extern "C" {
#include <lua.h>
}

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scriptprof/profile.hpp"
#include "scriptprof/sampling_timer.hpp"

namespace scriptprof::lua {

struct SamplerSettings {
  TimerClock clock = TimerClock::Cpu;
  std::uint64_t period_ns = 10'000'000;  // 100 Hz
  bool count_calls = false;              // exact calls through a call hook (costs time)
  bool full_stacks = false;              // keep every sample (timeline), not only the tree
};

// The host hook a state had before the sampler armed its own.
struct HostHook {
  lua_Hook hook = nullptr;
  int mask = 0;
  int count = 0;
};

class LuaSampler {
 public:
  // One sampler per Lua universe; `main` is its main thread.
  explicit LuaSampler(lua_State* main);
  ~LuaSampler();
  LuaSampler(const LuaSampler&) = delete;
  LuaSampler& operator=(const LuaSampler&) = delete;

  // Starts sampling `L` (which must be running on the calling OS thread); samples add to the
  // current profile until stop(). Returns false with a reason when it cannot start.
  bool start(lua_State* L, const SamplerSettings& settings, std::string* error);
  // Stops the timer and removes every hook the sampler set. Idempotent.
  void stop();
  bool active() const { return active_; }
  // Profiled seconds over every start/stop pair since the last reset, the current run included.
  double accumulated_seconds() const {
    return profile_->total_seconds + (active_ ? static_cast<double>(timer_.program_ns()) / 1e9 : 0.0);
  }

  // The profile being filled (or last filled). Its time accumulates over start/stop pairs.
  Profile& profile() { return *profile_; }
  std::shared_ptr<Profile> shared_profile() { return profile_; }
  // Starts a fresh profile (drops samples and the function caches). Not while active.
  void reset();
  // Makes `profile` (e.g. read from a file) the last run, for reports and writers.
  void adopt(std::shared_ptr<Profile> profile) {
    reset();
    profile_ = std::move(profile);
  }

  // A call to this C function is the profiler's own entry: stack walks stop below it, and it is
  // never counted as a call.
  void add_boundary(lua_CFunction f) { boundaries_.insert(reinterpret_cast<void*>(f)); }
  // Gives a C function a fixed report name.
  void name_c_function(lua_CFunction f, std::string name) {
    c_names_[reinterpret_cast<void*>(f)] = std::move(name);
  }
  // The profiler's own C functions: never a frame of a sample, never counted.
  void add_own(lua_CFunction f) { own_.insert(reinterpret_cast<void*>(f)); }

  // A C host that resumes coroutines itself calls these around lua_resume(co, from, ...), so
  // samples go to the coroutine that runs. The coroutine library replacements call them too.
  void enter_coroutine(lua_State* from, lua_State* co);
  void leave_coroutine(lua_State* co, lua_State* from);
  // Called after lua_newthread: a new thread copies its creator's hook, which may be ours.
  void fix_inherited_hook(lua_State* creator, lua_State* created);

  // Function identity of the function running at `ar` in `L` (for proc_call_data and friends).
  FunctionId function_of(lua_State* L, lua_Debug* ar);
  // Function identity of the function value at stack index `idx`, if it was ever seen.
  bool find_function_value(lua_State* L, int idx, FunctionId* out);

  // The sampler of L's universe, or nullptr.
  static LuaSampler* of(lua_State* L);

  // ---- internal entry points (hook and timer callbacks) ----
  void on_tick(std::uint64_t ticks, std::uint64_t program_ns);  // signal context
  void on_hook(lua_State* L, lua_Debug* ar);

 private:
  struct LuaKey {
    const void* source;  // the prototype's source string (stable while the prototype lives)
    int line;
    int last_line;
    bool operator==(const LuaKey& o) const {
      return source == o.source && line == o.line && last_line == o.last_line;
    }
  };
  struct LuaKeyHash {
    std::size_t operator()(const LuaKey& k) const {
      return std::hash<const void*>()(k.source) ^ (std::size_t(k.line) * 0x9e3779b97f4a7c15ull) ^
             (std::size_t(k.last_line) << 20);
    }
  };

  void arm(lua_State* L, int extra_mask);          // signal or critical context
  void disarm();                                   // normal context, inside critical_
  void take_sample(lua_State* L, bool skip_leaf);
  void count_call(lua_State* L, lua_Debug* ar);
  FunctionId cached_id(lua_State* L, lua_Debug* ar, bool* boundary);
  void reset_id_cache(lua_State* L);
  bool walk(lua_State* L, int first_level, std::vector<FunctionId>* leaf_first);
  FunctionId intern(lua_State* L, lua_Debug* ar, bool* boundary);
  void learn_c_names(lua_State* L);
  std::uint32_t chain_index(lua_State* L) const;
  int base_mask() const { return counting_ ? LUA_MASKCALL : 0; }

  lua_State* main_;                                // main thread of the universe
  std::shared_ptr<Profile> profile_;
  SamplingTimer timer_;
  SamplerSettings settings_;
  bool active_ = false;
  bool counting_ = false;

  // Shared with the signal handler (lock-free atomics only).
  std::atomic<lua_State*> current_{nullptr};       // the state running Lua code now
  std::atomic<lua_State*> armed_{nullptr};         // state whose hook we replaced, or null
  std::atomic<std::uint64_t> pending_{0};          // ticks not yet turned into a sample
  std::atomic<bool> critical_{false};              // normal code is moving the arm: hands off
  HostHook saved_;                                 // armed_'s own hook, restored after the sample
  std::atomic<std::uint64_t> arms_{0};             // times the handler armed a hook
  std::atomic<std::uint64_t> merged_{0};           // ticks that found a hook already armed
  std::atomic<std::uint64_t> next_arm_ns_{0};      // program time before which sampling is over budget

  std::vector<lua_State*> chain_;                  // resumer chain: chain_[i] resumed chain_[i+1]
  std::unordered_set<void*> boundaries_;           // profiler entry points (C functions)
  std::unordered_set<void*> own_;                  // other profiler C functions
  HostHook counting_host_;                         // the start state's hook under call counting
  std::uint64_t elapsed_before_ns_ = 0;            // program time of earlier start/stop pairs
  std::unordered_map<LuaKey, FunctionId, LuaKeyHash> lua_ids_;
  std::unordered_map<void*, FunctionId> c_ids_;
  std::unordered_map<void*, std::string> c_names_; // "string.rep" for library C functions
  std::vector<std::string> id_source_;             // per FunctionId: full source, to verify keys
  std::vector<std::uint8_t> name_tries_;           // per FunctionId: attempts left to find a name
  std::vector<FunctionId> frames_;                 // scratch: one walk, leaf first
  NodeId last_leaf_ = kNoNode;                     // leaf of the latest sample of this profile
};

}  // namespace scriptprof::lua
