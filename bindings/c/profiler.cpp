#include "scriptprof/profiler.hpp"

#include <sstream>
#include <thread>
#include <type_traits>

#include "lua_attach.hpp"
#include "native_sampler.hpp"
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
#include "angelscript_sampler.hpp"
#endif
#include "scriptprof/profile_merge.hpp"
#include "scriptprof/run_server.hpp"
#include "zones.hpp"

namespace scriptprof {

// One Lua state (or one native-only thread) and the thread it runs on.
struct Profiler::Session {
  Profiler* owner = nullptr;
  lua_State* L = nullptr;                        // null: a native-only thread
  lua::LuaSampler* sampler = nullptr;            // null once the state is closed
  std::unique_ptr<native::NativeSampler> native; // native-only threads
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
  std::unique_ptr<angelscript::AngelScriptSampler> script;  // a thread's AngelScript contexts
#endif
  std::thread::id thread;                        // where it runs (while running)
  bool running = false;
  bool ran = false;                              // this profiler ran the state's sampler
  std::shared_ptr<Profile> kept[3];              // the profiles by SampleKind, kept past lua_close
  std::shared_ptr<RunServer> server;             // serving this session's run (null: not served)
  std::uint64_t served_run = 0;

  // The running sampler's engine.
  SamplerEngine* engine() {
    if (native) return &native->engine();
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
    if (script) return &script->engine();
#endif
    return sampler ? &sampler->engine() : nullptr;
  }

  // Serves the run just started (on its thread) when the profiler serves.
  void serve(const std::shared_ptr<RunServer>& by, std::string program, std::string runtime) {
    if (!by || !engine()) return;
    ServedRun about;
    about.program = std::move(program);
    about.runtime = std::move(runtime);
    about.process_names = [] { return native::process_names(); };
    served_run = serve_engine(*by, *engine(), std::move(about));
    server = by;
  }

  // Before the run stops, on its thread: the server lets go of it.
  void unserve() {
    if (server && engine()) unserve_engine(*server, *engine(), served_run);
    server.reset();
  }

  // What the sampler collected, kept: the sampler is about to be reset or to go.
  void keep_profiles() {
    for (SampleKind kind : {SampleKind::Time, SampleKind::Gc, SampleKind::Space})
      kept[static_cast<int>(kind)] = sampler->engine().shared_profile(kind);
  }

  // The sampler belongs to the state and outlives this profiler: what this profiler collected
  // is taken out of it (kept here), so that the next profiler on the state starts empty.
  void let_go_of_sampler() {
    if (!sampler) return;
    sampler->forget_destroy(this);
    if (ran && !sampler->engine().active()) {
      keep_profiles();
      sampler->reset();
    }
    sampler = nullptr;
  }

  // Ends the run; on the thread it runs on.
  void stop_here() {
    unserve();
    if (native) native->stop();
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
    if (script) script->stop();
#endif
    if (sampler) sampler->stop();
    native::set_thread_listener(nullptr);
    running = false;
  }

  // The profile of `kind` (a native thread has time only: null for the others).
  std::shared_ptr<Profile> profile(SampleKind kind) const {
    if (native) return kind == SampleKind::Time ? native->profile() : nullptr;
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
    if (script) return script->shared_profile(kind);
#endif
    return sampler ? sampler->engine().shared_profile(kind) : kept[static_cast<int>(kind)];
  }
};

namespace {

std::string state_name(lua_State* L) {
  std::ostringstream s;
  s << "lua_State " << static_cast<const void*>(L);
  return s.str();
}

// "lua_State 0x..." or "a native thread", for messages.
std::string describe(const Profiler::Session& s) {
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
  if (s.script) return "a thread's AngelScript contexts";
#endif
  return s.L ? state_name(s.L) : std::string("a native thread");
}

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

// Runs fn under lua_pcall: Lua raises errors (out of memory) by longjmp, which must not reach
// the host through the C API. Messages start with `what` ("start: Lua error: ...").
template <class Fn>
bool protected_lua(const char* what, lua_State* L, Fn&& fn, std::string* error) {
  struct Call {
    std::remove_reference_t<Fn>* fn;
    static int run(lua_State* L) {
      auto* call = static_cast<Call*>(lua_touserdata(L, 1));
      (*call->fn)(L);
      return 0;
    }
  } call{&fn};
  if (!lua_checkstack(L, 3)) return fail(error, std::string(what) + ": the Lua stack cannot grow");
  lua_pushcfunction(L, &Call::run);
  lua_pushlightuserdata(L, &call);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    const char* msg = lua_tostring(L, -1);
    fail(error, std::string(what) + ": Lua error: " + (msg ? msg : "(not a string)"));
    lua_pop(L, 1);
    return false;
  }
  return true;
}

// The calling thread's listener: zone changes, fiber switches and frames reach its session.
void session_before_change(void* context) {
  auto* s = static_cast<Profiler::Session*>(context);
  if (s->sampler) s->sampler->sample_now();
}

void session_switched(void* context, native::Fiber* from, native::Fiber* to) {
  auto* s = static_cast<Profiler::Session*>(context);
  if (!s->sampler) return;
  // A fiber running a state of another universe runs no Lua this sampler can walk.
  native::Fiber* target = to;
  native::Fiber plain;
  if (to->script && lua::LuaSampler::of(static_cast<lua_State*>(to->script)) != s->sampler) target = &plain;
  s->sampler->switch_fiber(from, target);
}

void session_frame(void* context) {
  auto* s = static_cast<Profiler::Session*>(context);
  if (s->sampler) s->sampler->mark_frame();
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
  if (s->script) s->script->mark_frame();
#endif
}

void listen_on_this_thread(void* session) {
  native::ThreadListener l;
  l.before_change = session_before_change;
  l.switched = session_switched;
  l.frame = session_frame;
  l.context = session;
  native::set_thread_listener(&l);
}

}  // namespace

Profiler::Profiler(const ProfilerOptions& options) : options_(options) {}

bool Profiler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : sessions_)
    if (s->running) return true;
  return false;
}

bool Profiler::set_option(std::string_view name, std::string_view text, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : sessions_)
    if (s->running) return fail(error, "set_option: " + describe(*s) + " is running; stop it first");
  std::string why;
  if (!parse_run_option(&options_, name, text, &why))
    return fail(error, "set_option: " + (is_run_option(name) ? std::string(name) + " " : std::string()) + why);
  return true;
}

bool Profiler::set_server(std::shared_ptr<RunServer> server, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!server) return fail(error, "serve: no server");
  if (server_) return fail(error, "serve: already serving at " + server_->address());
  for (const auto& s : sessions_)
    if (s->running) return fail(error, "serve: " + describe(*s) + " is running; serve before starting");
  server_ = std::move(server);
  return true;
}

void Profiler::stop_serving() {
  std::shared_ptr<RunServer> server;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    server = std::move(server_);
  }
  if (server) server->stop();  // outside the lock: a request under way may be building its profile
}

std::string Profiler::serving_address() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return server_ ? server_->address() : std::string();
}

Profiler::~Profiler() {
  stop_serving();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& s : sessions_) {
    if (s->running && s->thread == std::this_thread::get_id()) {
      s->stop_here();
    }
    s->let_go_of_sampler();
  }
}

Profiler::Session* Profiler::find(lua_State* L) const {
  for (const auto& s : sessions_)
    if (L ? s->L == L : (s->native && s->thread == std::this_thread::get_id())) return s.get();
  return nullptr;
}

void Profiler::state_closed(void* context) {
  // On the state's thread, inside lua_close: the sampler has stopped and is going away.
  auto* s = static_cast<Session*>(context);
  std::lock_guard<std::mutex> lock(s->owner->mutex_);
  s->unserve();
  s->keep_profiles();
  if (s->running && s->thread == std::this_thread::get_id()) native::set_thread_listener(nullptr);
  s->running = false;
  s->sampler = nullptr;
}

bool Profiler::attach(lua_State* L, std::string* error) {
  if (!L) return fail(error, "attach: the lua_State is null");
  std::lock_guard<std::mutex> lock(mutex_);
  if (find(L)) return true;
  lua::LuaSampler* sampler = nullptr;
  if (!protected_lua("attach", L, [&](lua_State* S) { sampler = lua::attach_sampler(S); }, error)) return false;
  auto s = std::make_unique<Session>();
  s->owner = this;
  s->L = L;
  s->sampler = sampler;
  sampler->on_destroy(&Profiler::state_closed, s.get());
  sessions_.push_back(std::move(s));
  return true;
}

bool Profiler::start(lua_State* L, std::string* error, Failure* kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind) *kind = Failure::Misuse;
  Session* s = find(L);
  if (!s && L) return fail(error, "start: " + state_name(L) + " is not attached (attach it first)");
  if (!s) {
    auto fresh = std::make_unique<Session>();
    fresh->owner = this;
    fresh->native = std::make_unique<native::NativeSampler>();
    fresh->thread = std::this_thread::get_id();
    s = fresh.get();
    sessions_.push_back(std::move(fresh));
  }
  if (s->running)
    return fail(error, "start: " + (L ? state_name(L) : std::string("this thread")) + " is already started" +
                           (s->thread == std::this_thread::get_id() ? "" : " on another thread"));
  if (L && !s->sampler) return fail(error, "start: " + state_name(L) + " was closed");
  // One session per thread: the thread's timer and zone listener belong to it.
  for (const auto& other : sessions_)
    if (other.get() != s && other->running && other->thread == std::this_thread::get_id())
      return fail(error, "start: this thread already samples " +
                             (other->L ? state_name(other->L) : std::string("its native code")) + "; stop that first");
  if (s->sampler && s->sampler->engine().active())
    return fail(error, "start: " + state_name(L) + " is already profiled through the Lua module; stop that first");
  if (s->sampler && s->sampler->engine().profile().health.limit_reached)
    return fail(error, "start: " + state_name(L) + " reached max_samples (" + std::to_string(options_.max_samples) +
                           "); take the profile and reset first");
  // Past the checks above, only the system can refuse: the timer, the signal handler, memory.
  if (kind) *kind = Failure::System;
  lua::SamplerSettings settings;  // one set of run settings for both kinds of session
  static_cast<RunSettings&>(settings) = options_;
  if (server_) make_served(settings);  // no tick until a request asks
  std::string why;
  if (s->native) {
    RunSettings native_run = settings;
    native_run.count_calls = false;  // counted calls are Lua's; a native thread has none to count
    native_run.heap = false;         // and so is the in-use heap: a native thread has no Lua allocator
    if (!s->native->start(native_run, &why)) return fail(error, "start: " + why);
    s->serve(server_, "a native thread", "native code");
  } else {
    settings.native_zones = true;
    bool started = false;
    if (!protected_lua("start", L, [&](lua_State* S) { started = s->sampler->start(S, settings, &why); }, error))
      return false;
    if (!started) return fail(error, "start: " + why);
    listen_on_this_thread(s);
    s->serve(server_, state_name(L), LUA_RELEASE);
  }
  s->thread = std::this_thread::get_id();
  s->running = true;
  s->ran = true;
  return true;
}

bool Profiler::stop(lua_State* L, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = find(L);
  if (!s || !s->running) return fail(error, "stop: " + (L ? state_name(L) : std::string("this thread")) + " is not started");
  if (s->thread != std::this_thread::get_id())
    return fail(error, "stop: " + (L ? state_name(L) : std::string("the session")) +
                           " runs on another thread; stop it there (its timer and hooks belong to that thread)");
  s->stop_here();
  return true;
}

bool Profiler::detach(lua_State* L, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Session* s = find(L);
    if (!s || !L) return fail(error, "detach: " + state_name(L) + " is not attached");
    if (!s->running) {
      if (s->sampler) {
        s->keep_profiles();
        s->let_go_of_sampler();
      }
      return true;
    }
  }
  if (!stop(L, error)) return false;
  return detach(L, error);
}

bool Profiler::can_destroy(std::string* error) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : sessions_)
    if (s->running && s->thread != std::this_thread::get_id())
      return fail(error, describe(*s) +
                             " is still started on another thread; stop it there first");
  return true;
}

bool Profiler::take_profile(Profile* out, std::string* error, SampleKind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : sessions_)
    if (s->running)
      return fail(error, "take_profile: " + describe(*s) +
                             " is still started; stop every thread first");
  *out = Profile{};
  out->name = "scriptprof";
  for (const auto& s : sessions_)
    if (auto p = s->profile(kind)) merge_profile(out, *p);
  // Threads and fibers may have been named after their first sample.
  for (const auto& [id, name] : native::process_names())
    for (ThreadInfo& t : out->threads)
      if (t.id == id) t.name = name;
  return true;
}

bool Profiler::reset(std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : sessions_)
    if (s->running) return fail(error, "reset: stop every thread first");
  for (auto& s : sessions_) {
    if (s->sampler) s->sampler->reset();
    if (s->native) s->native = std::make_unique<native::NativeSampler>();
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
    if (s->script) s->script = std::make_unique<angelscript::AngelScriptSampler>();
#endif
    for (auto& k : s->kept) k.reset();
  }
  return true;
}

Profiler::Session* Profiler::angelscript_session(bool create) {
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
  for (const auto& s : sessions_)
    if (s->script && s->thread == std::this_thread::get_id()) return s.get();
  if (!create) return nullptr;
  auto fresh = std::make_unique<Session>();
  fresh->owner = this;
  fresh->script = std::make_unique<angelscript::AngelScriptSampler>();
  fresh->thread = std::this_thread::get_id();
  sessions_.push_back(std::move(fresh));
  return sessions_.back().get();
#else
  (void)create;
  return nullptr;
#endif
}

bool Profiler::start_angelscript(std::string* error, Failure* kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind) *kind = Failure::Misuse;
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
  Session* s = angelscript_session(true);
  if (s->running) return fail(error, "start: this thread's AngelScript contexts are already started");
  for (const auto& other : sessions_)
    if (other.get() != s && other->running && other->thread == std::this_thread::get_id())
      return fail(error, "start: this thread already samples " + describe(*other) + "; stop that first");
  RunSettings settings = options_;
  if (server_) make_served(settings);  // no tick until a request asks
  settings.heap = false;  // the heap option is the Lua states': AngelScript's frees are not seen
  std::string why;
  if (!s->script->start(settings, &why)) {
    // Counted calls are a capability AngelScript lacks (the caller's options asked for them);
    // anything else is the system's (the timer).
    if (kind) *kind = settings.count_calls ? Failure::Misuse : Failure::System;
    return fail(error, "start: " + why);
  }
  listen_on_this_thread(s);
  s->serve(server_, "a thread's AngelScript contexts", "AngelScript");
  s->running = true;
  return true;
#else
  return fail(error, "start: this scriptprof was built without AngelScript (install angelscript-dev and build again)");
#endif
}

bool Profiler::stop_angelscript(std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = angelscript_session(false);
  if (!s || !s->running) return fail(error, "stop: this thread's AngelScript contexts are not started");
  s->stop_here();
  return true;
}

angelscript::AngelScriptSampler* Profiler::angelscript_sampler() {
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = angelscript_session(true);
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
  return s ? s->script.get() : nullptr;
#else
  (void)s;
  return nullptr;
#endif
}

}  // namespace scriptprof
