// The AngelScript adapter: the profiler on the engine, for hosts that run AngelScript 2.35.
//
// Sampling path: the engine's tick, on the timer's own thread (no signal reaches the program),
// calls the arm (ContextArm, angelscript_context_arm.hpp), which asks the innermost context
// running under execute() to suspend (asIScriptContext::Suspend only sets flags, and
// AngelScript documents it as callable from another thread). The VM stops at its next
// statement or call, the context's Execute() returns asEXECUTION_SUSPENDED to execute(), the adapter walks the stacks
// of every context execute() runs on this thread (innermost last, each outer one's registered
// function between them), records the sample, and calls Execute() again. The host calls
// execute(ctx) where it called ctx->Execute(): that loop is the only way a suspension meant
// for the profiler never reaches the host.
//
// What AngelScript cannot give, and so the engine refuses: exact call counts (no call hook)
// and GC samples (its collector reports statistics only). Allocation sampling needs the
// memory functions installed before the script engine is made (install_memory_functions()).
#pragma once
#include <angelscript.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "angelscript_context_arm.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::angelscript {

#if defined(AS_USE_NAMESPACE) || defined(AS_DEBIAN_LIB)
using namespace AngelScript;  // a build of AngelScript in its namespace (Debian's)
#endif

class AngelScriptSampler final : private RuntimeAdapter {
 public:
  AngelScriptSampler();
  ~AngelScriptSampler() { stop(); }
  AngelScriptSampler(const AngelScriptSampler&) = delete;
  AngelScriptSampler& operator=(const AngelScriptSampler&) = delete;

  // Starts a run on the calling thread: its contexts run under execute() are sampled. False
  // with a reason (count_calls, gc, alloc without the memory functions, another run on this
  // thread, the timer).
  bool start(const RunSettings& settings, std::string* error);
  // Ends the run (on the thread that started it); waiting ticks go to the host or the last
  // stack. The functions met keep their names in the profiles. Idempotent.
  void stop();
  bool active() const { return engine_.active(); }
  // The profiled program starts now, after a start with settings.hold_clock.
  void release_program_clock() { engine_.release_clock(); }

  // ctx->Execute(), sampled: a suspension the profiler asked for is sampled and execution goes
  // on; anything else (finished, an exception, the host's own suspend()) is returned as is.
  int execute(asIScriptContext* ctx);
  // Names a context's process in the profiles ("enemy AI"); by default a context is named
  // after the function it first ran.
  void name_context(asIScriptContext* ctx, const std::string& name);
  // The host tells us that `parent`, running now on this thread, started the co-routine
  // context `child` (a script's createCoRoutine(), a spawned task): child's samples then sit
  // under the stack parent has now, its registered function included, as a Lua coroutine's
  // sit under its resumer. During a run (on the run's thread); parent null: child stands alone
  // again (call it before a context is released, if its address may be reused).
  void started_by(asIScriptContext* child, asIScriptContext* parent);
  // Whether ctx runs under execute() on this thread now.
  bool runs(asIScriptContext* ctx) const;
  // Marks a game frame's boundary (the "frames" report).
  void mark_frame();

  std::shared_ptr<Profile> shared_profile(SampleKind kind) { return engine_.shared_profile(kind); }
  Profile& profile(SampleKind kind) { return engine_.profile(kind); }
  // The run's engine (to serve it: scriptprof/profile_server.hpp).
  SamplerEngine& engine() { return engine_; }
  // The sampler running on the calling thread, or null.
  static AngelScriptSampler* current();

 private:
  friend struct AllocationHook;
  // The adapter contract: the tick is contexts_'s.
  Capabilities capabilities() const override;
  TickArm& tick_arm() override { return contexts_; }

  // A sample of the running contexts after a suspension at `depth`, ended by the registered
  // function the tick found (if any).
  void sample_suspended(int depth, asIScriptFunction* leaf_native);
  std::pair<bool, bool> take_arm(int depth, asIScriptContext* ctx, bool stopped);  // {armed, stray}
  // Ticks that found no context to suspend (the host between scripts, a context that finished
  // first): one sample of the contexts running now, ended by `leaf` (none: "(host)").
  void sample_outside(asIScriptFunction* leaf);
  // Records the waiting ticks and bytes as samples of frames(); nothing when none wait.
  void record_pending(const SamplerEngine::Sampling& sampling, std::uint32_t process);
  // Appends the stacks of the contexts running at [0, depth), root first; `inner_native`: each outer
  // context's registered function that called the next one.
  void append_running(int depth);
  // Appends ctx's call stack, root first (a nested state's registered function included).
  void append_stack(asIScriptContext* ctx);
  void append_function(asIScriptFunction* f, int line);
  // `line_inside`: a line f was sampled on (0: none), from which its lines are found.
  FunctionId function_id(asIScriptFunction* f, int line_inside);
  std::uint32_t process_of(asIScriptContext* ctx);
  void release_functions();

  SamplerEngine engine_{this};
  ContextArm contexts_;  // execute() calls, outermost first, and the tick's suspensions
  std::unordered_map<asIScriptFunction*, FunctionId> ids_;  // this run's functions (each AddRef'd)
  std::unordered_map<std::string, FunctionId> ids_by_text_;  // every run's: identity past a run
  std::unordered_map<asIScriptContext*, std::uint32_t> processes_;
  std::unordered_map<asIScriptContext*, std::string> context_names_;
  std::unordered_map<asIScriptContext*, std::vector<FunctionId>> started_under_;  // started_by()
  std::uint32_t next_process_ = 1;  // 0 is the host thread itself
  FunctionId host_frame_ = kNoFunction;
  bool in_sample_ = false;  // our own walk allocates through AngelScript: not the program's
};

// The host's call in place of ctx->Execute(): sampled when a run is on this thread.
int execute(asIScriptContext* ctx);
// Suspends ctx for the host (a script's wait() or yield()): execute() returns
// asEXECUTION_SUSPENDED for it, even when the profiler's own suspension falls at the same point.
// Call it where the host called ctx->Suspend(); on the context's thread.
void suspend(asIScriptContext* ctx);
// Installs the profiler's memory functions (asSetGlobalMemoryFunctions), for allocation
// sampling. Call before the first asCreateScriptEngine; a host with its own memory functions
// passes them to be called in turn. False if AngelScript refused.
bool install_memory_functions(asALLOCFUNC_t alloc = nullptr, asFREEFUNC_t free = nullptr);

}  // namespace scriptprof::angelscript
