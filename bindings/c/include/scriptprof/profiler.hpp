// The C++ embedding API: one profiler for a host's Lua states, threads, fibers and zones.
// bindings/c/include/scriptprof.h is the same API in C.
//
// Threads: each OS thread runs its own lua_State and calls start() and stop() itself, so the
// timer signal is aimed at that thread and its samples land on it. take_profile() merges every
// thread (and fiber) into one profile, a process each.
#pragma once
extern "C" {
#include <lua.h>
}

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/live_collection.hpp"
#include "scriptprof/profile.hpp"
#include "scriptprof/run_options.hpp"
#include "scriptprof/sampler_engine.hpp"
#include "scriptprof/sampling_timer.hpp"

struct scriptprof_profile;  // the C API's handle (scriptprof.h)

namespace scriptprof {

namespace angelscript {
class AngelScriptSampler;  // runtimes/angelscript/angelscript_sampler.hpp
}
class RunServer;  // scriptprof/run_server.hpp

// The core profile behind a C API handle, for C++ hosts that use both.
const Profile& profile_of(const scriptprof_profile* handle);

// A profiler's options are a run's (run_options.hpp: the one table the Lua module, the command
// lines and the C API share): clock, period_ns, count_calls, full_stacks, gc_samples,
// alloc_bytes, max_samples, interpret_closures, signal, ...
using ProfilerOptions = RunSettings;

// Why a call failed: the caller asked for something the profiler's state does not allow, or
// the system refused (timer, signal handler, memory).
enum class Failure { Misuse, System };

class Profiler {
 public:
  explicit Profiler(const ProfilerOptions& options = {});
  // Stops the sessions of the calling thread. Sessions still running on other threads must be
  // stopped there first: can_destroy() says whether any is.
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Registers a Lua state, on the thread that will run it, before it is started.
  bool attach(lua_State* L, std::string* error);
  // Starts sampling the calling thread, which runs L (nullptr: a thread that runs only native
  // code, whose samples are its zones). Samples add to what earlier runs collected. On failure
  // `kind` (if given) says whose it was.
  bool start(lua_State* L, std::string* error, Failure* kind = nullptr);
  // Stops the calling thread's run of L (nullptr: its native run).
  bool stop(lua_State* L, std::string* error);
  // Forgets L (stopping it first, on its thread); what it collected stays in the profile.
  bool detach(lua_State* L, std::string* error);
  // False, saying which, while a session runs on another thread than the caller's.
  bool can_destroy(std::string* error) const;

  // Starts and stops sampling the AngelScript contexts the calling thread runs through
  // scriptprof::angelscript::execute() (scriptprof_as_execute). One run per thread; refused
  // with a reason by a build without AngelScript.
  bool start_angelscript(std::string* error, Failure* kind = nullptr);
  bool stop_angelscript(std::string* error);
  // The calling thread's AngelScript sampler (made when first asked), to name contexts;
  // null in a build without AngelScript.
  angelscript::AngelScriptSampler* angelscript_sampler();

  // Every thread merged into `out`, one process per thread and fiber: the time profile, or the
  // gc or space one (the "gc" and "alloc" options). All runs must be stopped.
  bool take_profile(Profile* out, std::string* error, SampleKind kind = SampleKind::Time) const;
  // Drops everything collected (runs must be stopped).
  bool reset(std::string* error);

  const ProfilerOptions& options() const { return options_; }
  // Sets run option `name` from text, as luaprof's flag or the Lua module's key would
  // (run_options.hpp). Refused while any session runs; `error` names the option and the value.
  bool set_option(std::string_view name, std::string_view text, std::string* error);
  // Whether a session runs, on any thread.
  bool running() const;

  // Serves every session started from now on through `server` (scriptprof/serve.hpp's serve()
  // makes one and calls this): each state and native thread a run of it, named as in
  // take_profile, sampling only while a request asks. Refused while a session runs or while
  // serving. False with the reason.
  bool set_server(std::shared_ptr<RunServer> server, std::string* error);
  // Stops serving (a request under way answers 503). A session started while serving stays a
  // served run, with no tick, until it stops. Idempotent.
  void stop_serving();
  // "127.0.0.1:6060" as bound; empty when not serving.
  std::string serving_address() const;

 struct Session;  // one state or native thread (opaque)

 private:
  Session* find(lua_State* L) const;
  Session* angelscript_session(bool create);  // the calling thread's (made when asked)
  static void state_closed(void* context);

  ProfilerOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::shared_ptr<RunServer> server_;  // while serving (a served session holds it too)
};

}  // namespace scriptprof
