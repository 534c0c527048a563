#include "angelscript_sampler.hpp"

#include <thread>
#include <unordered_set>

#include "angelscript_memory.hpp"

namespace scriptprof::angelscript {

namespace {

thread_local AngelScriptSampler* t_current = nullptr;
// Contexts the host suspended through suspend() and execute() has not returned yet.
thread_local std::unordered_set<asIScriptContext*> t_host_suspends;
// Contexts an arm may have flagged after their Execute() cleared the flags (it raced their
// stop): their next stop under execute() is the profiler's. The flag is the context's, so
// this outlives a run (and its sampler): execute() takes such a stop between runs too.
thread_local std::unordered_set<asIScriptContext*> t_strays;

}  // namespace

AngelScriptSampler::AngelScriptSampler() = default;

AngelScriptSampler* AngelScriptSampler::current() { return t_current; }

Capabilities AngelScriptSampler::capabilities() const {
  Capabilities c;
  c.runtime = "AngelScript " ANGELSCRIPT_VERSION_STRING;
  c.thread_arm = true;                  // arm() only sets flags AngelScript lets other threads set
  c.call_events = false;                // no call hook: calls cannot be counted
  c.alloc_events = memory_functions_installed();
  c.gc_events = false;                  // the collector reports statistics, not cycles
  return c;
}

bool AngelScriptSampler::start(const RunSettings& settings, std::string* error) {
  if (engine_.active()) return true;
  if (t_current && t_current != this) {
    if (error) *error = "this thread already runs an AngelScript profile; stop it first";
    return false;
  }
  if (settings.alloc_bytes && !memory_functions_installed()) {
    if (error)
      *error = "allocation sampling needs the profiler's memory functions: call "
               "scriptprof::angelscript::install_memory_functions() before asCreateScriptEngine";
    return false;
  }
  if (!engine_.start(settings, false, error)) return false;
  t_current = this;
  if (settings.start_sampling && !engine_.resume(error, settings.hold_clock)) {
    t_current = nullptr;
    engine_.stop();
    return false;
  }
  return true;
}

void AngelScriptSampler::stop() {
  if (!engine_.active()) return;
  if (engine_.sampling() && engine_.pending_ticks() > 0) sample_outside(nullptr);
  engine_.stop();
  if (t_current == this) t_current = nullptr;
  release_functions();
}

int AngelScriptSampler::execute(asIScriptContext* ctx) {
  const int depth = contexts_.depth();
  if (!ctx || depth >= ContextArm::kMaxDepth) return ctx ? ctx->Execute() : asERROR;
  // Ticks so far belong to what ran before: the host, or the registered function calling us.
  if (engine_.sampling() && engine_.pending_ticks() > 0) sample_outside(nullptr);
  asIScriptFunction* entry = ctx->GetFunction(0);  // what it runs (prepared) or where it resumes
  contexts_.enter(ctx, process_of(ctx));
  int r;
  for (;;) {
    r = ctx->Execute();
    if (r != asEXECUTION_SUSPENDED) break;
    // Who stopped it: the host through suspend(); else the profiler, when an arm of this
    // execute() or a flag left pending by an earlier one (a stray) was there; else the host's
    // own ctx->Suspend(). An arm and the host at the same statement: the host gets it.
    const bool host = t_host_suspends.erase(ctx) > 0;
    const auto [armed, stray] = take_arm(depth, ctx, true);
    if (armed || stray) sample_suspended(depth + 1, armed ? contexts_.armed_native(depth) : nullptr);
    if (host || !(armed || stray)) break;
  }
  contexts_.lower(depth);
  t_host_suspends.erase(ctx);
  take_arm(depth, ctx, false);  // waits out arms in flight (see arm()), keeps a late one as a stray
  // Ticks that found the context no longer active are this context's.
  if (engine_.sampling() && engine_.pending_ticks() > 0) sample_outside(entry);
  contexts_.clear(depth);
  return r;
}

// After an Execute() of ctx at `depth` returned: whether an arm of it was set (armed), and,
// after a stop (`stopped`), whether a stray flag from before was pending (now consumed: a stop
// clears the flags, see Execute's end). An arm that found the context no longer active once
// its flag was set may have set it after Execute() cleared them: the context's next stop may
// be that flag, a stray.
std::pair<bool, bool> AngelScriptSampler::take_arm(int depth, asIScriptContext* ctx, bool stopped) {
  const auto [armed, late] = contexts_.take(depth, ctx);
  const bool stray = stopped && t_strays.erase(ctx) > 0;
  if (armed && late) t_strays.insert(ctx);
  return {armed, stray};
}

void AngelScriptSampler::sample_suspended(int depth, asIScriptFunction* leaf_native) {
  if (!engine_.sampling()) return;
  {
    const SamplerEngine::Sampling sampling(engine_);
    in_sample_ = true;
    engine_.frames().clear();
    engine_.lines().clear();
    append_running(depth);
    if (leaf_native) append_function(leaf_native, 0);
    record_pending(sampling, contexts_.process(depth - 1));
    in_sample_ = false;
  }
  engine_.finish_limit();  // max_samples: collection stops, the program runs on
}

void AngelScriptSampler::sample_outside(asIScriptFunction* leaf) {
  {
    const SamplerEngine::Sampling sampling(engine_);
    in_sample_ = true;
    const int depth = contexts_.depth();
    engine_.frames().clear();
    engine_.lines().clear();
    append_running(depth);
    if (depth > 0) {
      // The innermost running context is inside a registered function (it called us, or the
      // host's own Execute of another context): the ticks are that function's.
      if (asIScriptFunction* sys = contexts_.context(depth - 1)->GetSystemFunction()) append_function(sys, 0);
    }
    if (leaf) {
      append_function(leaf, 0);
    } else if (depth == 0) {
      if (host_frame_ == kNoFunction) host_frame_ = engine_.add_function({"(host)", "", 0, 0, FunctionKind::Pseudo});
      engine_.frames().push_back(host_frame_);
      engine_.lines().push_back(0);
    }
    record_pending(sampling, depth > 0 ? contexts_.process(depth - 1) : 0);
    in_sample_ = false;
  }
  engine_.finish_limit();
}

void AngelScriptSampler::record_pending(const SamplerEngine::Sampling& sampling, std::uint32_t process) {
  PendingWeight w = engine_.take_pending();
  if (w.ticks > 0 && engine_.collects(SampleKind::Time)) sampling.record(SampleKind::Time, w.ticks, process, w.since_ns);
  if (w.bytes > 0 && engine_.collects(SampleKind::Space)) sampling.record(SampleKind::Space, w.bytes, process);
}

void AngelScriptSampler::append_running(int depth) {
  if (depth > 0) {  // a co-routine the host said was started by another context: under its stack
    auto under = started_under_.find(contexts_.context(0));
    if (under != started_under_.end())
      for (FunctionId f : under->second) {
        engine_.frames().push_back(f);
        engine_.lines().push_back(0);
      }
  }
  for (int i = 0; i < depth; ++i) {
    asIScriptContext* ctx = contexts_.context(i);
    // A context nested in itself (PushState) holds its outer calls on its own stack: walked once,
    // at its innermost execute().
    bool again = false;
    for (int j = i + 1; j < depth && !again; ++j) again = contexts_.context(j) == ctx;
    if (again) continue;
    append_stack(ctx);
    if (i + 1 < depth)
      if (asIScriptFunction* sys = ctx->GetSystemFunction()) append_function(sys, 0);
  }
}

void AngelScriptSampler::append_stack(asIScriptContext* ctx) {
  asUINT n = ctx->GetCallstackSize();
  for (asUINT level = n; level-- > 0;) {
    asIScriptFunction* f = ctx->GetFunction(level);
    if (!f) continue;  // a nested state's marker without a registered function
    int line = f->GetFuncType() == asFUNC_SCRIPT ? ctx->GetLineNumber(level) : 0;
    append_function(f, line);
  }
}

void AngelScriptSampler::append_function(asIScriptFunction* f, int line) {
  engine_.frames().push_back(function_id(f, line));
  engine_.lines().push_back(line);
}

std::uint32_t AngelScriptSampler::process_of(asIScriptContext* ctx) {
  auto [it, added] = processes_.try_emplace(ctx, next_process_);
  if (!added) return it->second;  // named when first met this run (execute() runs per frame)
  ++next_process_;
  std::string name;
  auto named = context_names_.find(ctx);
  if (named != context_names_.end()) {
    name = named->second;
  } else {
    asIScriptFunction* f = ctx->GetFunction(0);
    name = "context " + std::to_string(it->second);
    if (f) name += " (" + std::string(f->GetName()) + ")";
  }
  if (engine_.active()) engine_.name_process(it->second, name, 0);
  return it->second;
}

void AngelScriptSampler::name_context(asIScriptContext* ctx, const std::string& name) {
  context_names_[ctx] = name;
}

void AngelScriptSampler::started_by(asIScriptContext* child, asIScriptContext* parent) {
  if (!child) return;
  if (!parent || !engine_.active()) {  // (outside a run nothing is sampled: nothing to keep)
    started_under_.erase(child);
    return;
  }
  // The parent's stack now, as a sample would walk it (its own starter's stack first).
  std::vector<FunctionId> saved_frames;
  std::vector<int> saved_lines;
  saved_frames.swap(engine_.frames());
  saved_lines.swap(engine_.lines());
  in_sample_ = true;
  auto under = started_under_.find(parent);
  if (under != started_under_.end()) engine_.frames() = under->second;
  append_stack(parent);
  if (asIScriptFunction* sys = parent->GetSystemFunction()) append_function(sys, 0);
  in_sample_ = false;
  started_under_[child] = std::move(engine_.frames());
  engine_.frames().swap(saved_frames);
  engine_.lines().swap(saved_lines);
}

bool AngelScriptSampler::runs(asIScriptContext* ctx) const {
  for (int i = 0, n = contexts_.depth(); i < n && i < ContextArm::kMaxDepth; ++i)
    if (contexts_.context(i) == ctx) return true;
  return false;
}

void AngelScriptSampler::mark_frame() {
  if (!engine_.sampling()) return;
  if (engine_.pending_ticks() > 0) sample_outside(nullptr);  // the ticks so far are the ending frame's
  const int depth = contexts_.depth();
  engine_.mark_frame(depth > 0 ? contexts_.process(depth - 1) : 0);
}

int execute(asIScriptContext* ctx) {
  if (AngelScriptSampler* s = t_current) return s->execute(ctx);
  if (!ctx) return asERROR;
  for (;;) {
    int r = ctx->Execute();
    if (r != asEXECUTION_SUSPENDED) return r;
    // Any stop consumes a stray flag; a stop that is not the host's is that flag's.
    const bool host = t_host_suspends.erase(ctx) > 0;
    if (t_strays.erase(ctx) == 0 || host) return r;
  }
}

void suspend(asIScriptContext* ctx) {
  if (!ctx) return;
  if ((t_current && t_current->runs(ctx)) || t_strays.count(ctx)) t_host_suspends.insert(ctx);
  ctx->Suspend();
}

}  // namespace scriptprof::angelscript
