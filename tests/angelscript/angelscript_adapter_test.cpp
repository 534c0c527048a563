// The AngelScript adapter: names, a known split, contexts nested in registered functions (the
// same context and another one, through execute() or the host's own Execute()), the host's own
// suspensions, what AngelScript cannot do, allocation bytes, and many runs.
#include <catch2/catch.hpp>

#include <scriptarray.h>
#include <scriptmath.h>
#include <scriptstdstring.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../core/function_lookup.hpp"
#include "angelscript_sampler.hpp"
#include "scriptprof/folded_stacks.hpp"

using scriptprof::FunctionId;
using scriptprof::Profile;
using scriptprof::RunSettings;
using scriptprof::SampleKind;
using scriptprof::test::function_named;
using namespace scriptprof::angelscript;  // and AngelScript's namespace, where it has one

namespace {

// Host functions the scripts call.
void nested_same(const std::string& decl) {  // runs `decl` on the calling context, nested
  asIScriptContext* ctx = asGetActiveContext();
  asIScriptFunction* f = ctx->GetEngine()->GetModule("test")->GetFunctionByDecl(decl.c_str());
  REQUIRE(ctx->PushState() >= 0);
  ctx->Prepare(f);
  CHECK(execute(ctx) == asEXECUTION_FINISHED);
  ctx->PopState();
}
void nested_other(const std::string& decl, bool through_profiler) {  // on a pooled context
  asIScriptContext* outer = asGetActiveContext();
  asIScriptEngine* engine = outer->GetEngine();
  asIScriptContext* ctx = engine->RequestContext();
  ctx->Prepare(engine->GetModule("test")->GetFunctionByDecl(decl.c_str()));
  CHECK((through_profiler ? execute(ctx) : ctx->Execute()) == asEXECUTION_FINISHED);
  engine->ReturnContext(ctx);
}
void nested_pool(const std::string& decl) { nested_other(decl, true); }
void nested_raw(const std::string& decl) { nested_other(decl, false); }
void host_wait() { suspend(asGetActiveContext()); }
// A co-routine scheduler: start_task() makes a context for a script function and tells the
// profiler who started it; the host runs the tasks later, from its own loop.
std::vector<asIScriptContext*> g_tasks;
void start_task(const std::string& decl) {
  asIScriptContext* parent = asGetActiveContext();
  asIScriptContext* task = parent->GetEngine()->CreateContext();
  task->Prepare(parent->GetEngine()->GetModule("test")->GetFunctionByDecl(decl.c_str()));
  if (AngelScriptSampler* s = AngelScriptSampler::current()) s->started_by(task, parent);
  g_tasks.push_back(task);
}

struct Script {
  asIScriptEngine* engine = asCreateScriptEngine();
  asIScriptModule* module = nullptr;
  asIScriptContext* ctx = nullptr;
  bool built = false;  // checked by the caller: Catch2's assertions are for the test's thread only
  explicit Script(const char* code) {
    RegisterStdString(engine);
    RegisterScriptArray(engine, true);
    RegisterScriptMath(engine);
    engine->RegisterGlobalFunction("void nested_same(const string &in)", asFUNCTION(nested_same), asCALL_CDECL);
    engine->RegisterGlobalFunction("void nested_pool(const string &in)", asFUNCTION(nested_pool), asCALL_CDECL);
    engine->RegisterGlobalFunction("void nested_raw(const string &in)", asFUNCTION(nested_raw), asCALL_CDECL);
    engine->RegisterGlobalFunction("void host_wait()", asFUNCTION(host_wait), asCALL_CDECL);
    engine->RegisterGlobalFunction("void start_task(const string &in)", asFUNCTION(start_task), asCALL_CDECL);
    module = engine->GetModule("test", asGM_ALWAYS_CREATE);
    module->AddScriptSection("test.as", code);
    built = module->Build() >= 0;
    ctx = engine->CreateContext();
  }
  ~Script() {
    ctx->Release();
    engine->ShutDownAndRelease();
  }
  int run(const char* decl) {
    ctx->Prepare(module->GetFunctionByDecl(decl));
    return execute(ctx);
  }
};

RunSettings at_hz(unsigned hz) {
  RunSettings s;
  s.period_ns = 1'000'000'000u / hz;
  return s;
}

double cumulative(const Profile& p, const std::string& name) {
  FunctionId f = function_named(p, name);
  return f == scriptprof::kNoFunction ? 0.0 : static_cast<double>(p.counts(f).cumulative);
}

const char* kGame = R"as(
  namespace ai {
    float think(int n) { float x = 0; for (int i = 0; i < n; i++) x += float(i % 7); return x; }
  }
  class Player {
    float x = 0;
    void update(float dt) { x += ai::think(3 * 100000) * dt; }
  }
  class Enemy {
    float x = 0;
    void update(float dt) { x += ai::think(100000) * dt; }
  }
  void main() {
    Player p; Enemy e;
    for (int f = 0; f < 300; f++) { p.update(0.01f); e.update(0.01f); }
  }
  void spin(int n) { float x = 0; for (int i = 0; i < n; i++) x += float(i % 7); }
  void inner() { spin(2000000); }
  void outer_same() { for (int i = 0; i < 20; i++) nested_same("void inner()"); }
  void outer_pool() { for (int i = 0; i < 20; i++) nested_pool("void inner()"); }
  void outer_raw() { for (int i = 0; i < 20; i++) nested_raw("void inner()"); }
  void spawner() { for (int i = 0; i < 10; i++) start_task("void inner()"); }
  int waits() { int n = 0; for (int i = 0; i < 200; i++) { spin(100000); host_wait(); n++; } return n; }
  void strings() { array<string> keep; for (int i = 0; i < 200000; i++) { keep.insertLast("item " + i); if (keep.length() > 100) keep.resize(0); } }
)as";

}  // namespace

TEST_CASE("AngelScript functions are named as declared, with class, namespace, section and lines") {
  Script s(kGame);
  REQUIRE(s.built);
  // The host's own CPU time while the sampler is on: start() and stop() themselves, and what
  // the run took beyond main()'s time unprofiled (under ThreadSanitizer, starting and stopping
  // the sampler's timer alone is long enough to draw ticks; measured on their own, they stay
  // counted when the profiled main() happens to run faster than the unprofiled one did).
  auto thread_seconds = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  double t = thread_seconds();
  REQUIRE(s.run("void main()") == asEXECUTION_FINISHED);
  const double main_seconds = thread_seconds() - t;
  AngelScriptSampler sampler;
  std::string error;
  const double t0 = thread_seconds();
  REQUIRE(sampler.start(at_hz(2000), &error));
  const double t1 = thread_seconds();
  REQUIRE(s.run("void main()") == asEXECUTION_FINISHED);
  const double t2 = thread_seconds();
  sampler.stop();
  const double host_seconds = (t1 - t0) + (thread_seconds() - t2) + std::max(0.0, t2 - t1 - main_seconds);
  const Profile& p = sampler.profile(SampleKind::Time);
  FunctionId update = function_named(p, "Player::update(float)");
  FunctionId think = function_named(p, "ai::think(int)");
  REQUIRE(update != scriptprof::kNoFunction);
  REQUIRE(think != scriptprof::kNoFunction);
  CHECK(p.functions.info(update).file == "test.as");
  CHECK(p.functions.info(update).line == 7);
  CHECK(p.functions.info(think).line == 3);
  CHECK(p.functions.info(think).last_line == 3);
  CHECK(function_named(p, "main()") != scriptprof::kNoFunction);
  // Every sample is under main(), but ticks in the host's own code around it, "(host)": no
  // more than that code's time explains at 2 kHz (twice it, for a run that took longer), and
  // two ticks at the edges. (Under ThreadSanitizer that code is slow enough to get ticks.)
  CHECK(cumulative(p, "main()") + cumulative(p, "(host)") == static_cast<double>(p.sample_weight()));
  CHECK(cumulative(p, "(host)") <= 2 + 2 * host_seconds * 2000);
}

TEST_CASE("A known split is measured in AngelScript at 1 kHz") {
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  std::string error;
  REQUIRE(sampler.start(at_hz(1000), &error));
  REQUIRE(s.run("void main()") == asEXECUTION_FINISHED);
  sampler.stop();
  const Profile& p = sampler.profile(SampleKind::Time);
  double player = cumulative(p, "Player::update(float)"), enemy = cumulative(p, "Enemy::update(float)");
  REQUIRE(player + enemy > 100);
  const double share = player / (player + enemy), sd = std::sqrt(0.75 * 0.25 / (player + enemy));
  CHECK(share == Approx(0.75).margin(4 * sd + 0.02));
}

TEST_CASE("A context nested in a registered function sits under it, on the same context or another") {
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  std::string error;
  REQUIRE(sampler.start(at_hz(2000), &error));
  REQUIRE(s.run("void outer_same()") == asEXECUTION_FINISHED);
  REQUIRE(s.run("void outer_pool()") == asEXECUTION_FINISHED);
  sampler.stop();
  std::string folded = scriptprof::write_folded(sampler.profile(SampleKind::Time));
  INFO(folded);
  // Each nested run's samples: the script caller, the registered function, the nested script.
  CHECK(folded.find("outer_same() (test.as:19);nested_same(const string&in) [C];inner() (test.as:18);spin(int)") != std::string::npos);
  CHECK(folded.find("outer_pool() (test.as:20);nested_pool(const string&in) [C];inner() (test.as:18);spin(int)") != std::string::npos);
  const Profile& p = sampler.profile(SampleKind::Time);
  CHECK(cumulative(p, "inner()") > 0.8 * static_cast<double>(p.sample_weight()));
}

TEST_CASE("A co-routine context sits under the stack of the context that started it, as the host says") {
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  std::string error;
  REQUIRE(sampler.start(at_hz(2000), &error));
  g_tasks.clear();
  REQUIRE(s.run("void spawner()") == asEXECUTION_FINISHED);
  REQUIRE(g_tasks.size() == 10);
  for (asIScriptContext* task : g_tasks) {  // later, from the host's loop
    CHECK(execute(task) == asEXECUTION_FINISHED);
    sampler.started_by(task, nullptr);
    task->Release();
  }
  sampler.stop();
  std::string folded = scriptprof::write_folded(sampler.profile(SampleKind::Time));
  INFO(folded);
  CHECK(folded.find("spawner() (test.as:22);start_task(const string&in) [C];inner() (test.as:18);spin(int)") != std::string::npos);
  // Each task is its own process, beside main's context.
  CHECK(sampler.profile(SampleKind::Time).threads.size() >= 3);
}

TEST_CASE("A host's own Execute() of another context is sampled as its registered caller, and not broken") {
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  std::string error;
  REQUIRE(sampler.start(at_hz(2000), &error));
  REQUIRE(s.run("void outer_raw()") == asEXECUTION_FINISHED);  // nested_raw checks FINISHED inside
  sampler.stop();
  const Profile& p = sampler.profile(SampleKind::Time);
  FunctionId raw = function_named(p, "nested_raw(const string&in)");
  REQUIRE(raw != scriptprof::kNoFunction);
  CHECK(static_cast<double>(p.counts(raw).self) > 0.8 * static_cast<double>(p.sample_weight()));
}

TEST_CASE("The host's own suspensions reach the host, every one, while the profiler suspends too") {
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  std::string error;
  REQUIRE(sampler.start(at_hz(10000), &error));
  s.ctx->Prepare(s.module->GetFunctionByDecl("int waits()"));
  int suspensions = 0;
  int r;
  while ((r = execute(s.ctx)) == asEXECUTION_SUSPENDED) ++suspensions;
  sampler.stop();
  REQUIRE(r == asEXECUTION_FINISHED);
  CHECK(suspensions == 200);
  CHECK(s.ctx->GetReturnDWord() == 200);
  CHECK(sampler.profile(SampleKind::Time).sample_weight() > 0);
}

TEST_CASE("AngelScript refuses what it cannot do, naming the runtime and the capability") {
  AngelScriptSampler sampler;
  std::string error;
  RunSettings calls = at_hz(1000);
  calls.count_calls = true;
  CHECK_FALSE(sampler.start(calls, &error));
  CHECK(error.find("AngelScript") != std::string::npos);
  CHECK(error.find("call") != std::string::npos);
  RunSettings gc = at_hz(1000);
  gc.gc_samples = true;
  error.clear();
  CHECK_FALSE(sampler.start(gc, &error));
  CHECK(error.find("AngelScript") != std::string::npos);
  CHECK_FALSE(sampler.active());
}

TEST_CASE("Allocation bytes are charged to the script stack that allocated") {
  REQUIRE(install_memory_functions());  // before the engine (Script makes it)
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  RunSettings settings = at_hz(1000);
  settings.alloc_bytes = true;
  settings.sample_time = false;
  std::string error;
  REQUIRE(sampler.start(settings, &error));
  REQUIRE(s.run("void strings()") == asEXECUTION_FINISHED);
  sampler.stop();
  const Profile& space = sampler.profile(SampleKind::Space);
  REQUIRE(space.sample_weight() > 1'000'000);  // 200000 strings of about 10 bytes and their arrays
  CHECK(cumulative(space, "strings()") == static_cast<double>(space.sample_weight()));
}

TEST_CASE("Many AngelScript runs add to one profile, with one function per declaration") {
  Script s(kGame);
  REQUIRE(s.built);
  AngelScriptSampler sampler;
  std::string error;
  for (int i = 0; i < 50; ++i) {
    REQUIRE(sampler.start(at_hz(5000), &error));
    REQUIRE(s.run("void inner()") == asEXECUTION_FINISHED);
    sampler.stop();
  }
  const Profile& p = sampler.profile(SampleKind::Time);
  int spins = 0;
  for (FunctionId f = 0; f < p.functions.size(); ++f) spins += p.functions.info(f).name == "spin(int)";
  CHECK(spins == 1);
  INFO(scriptprof::write_folded(p));  // (a tick left as inner() ended went to spin() alone)
  // Ticks between runs of the script, in the host's own code, are "(host)", not the script's.
  CHECK(cumulative(p, "inner()") + cumulative(p, "(host)") == static_cast<double>(p.sample_weight()));
  CHECK(cumulative(p, "inner()") > 0.95 * static_cast<double>(p.sample_weight()));
  CHECK(p.sample_weight() > 100);
}

TEST_CASE("Two threads profile their own AngelScript engines at once", "[threads]") {
  asPrepareMultithread();
  // AngelScript 2.35's string add-on makes its one string factory on first use without a lock
  // (later releases take one): two engines registering strings at once made two, and
  // LeakSanitizer failed this test on the one lost. A host makes its first engine before its
  // threads do, as here.
  { Script first("void nothing() {}"); }
  // The scripts allocate (strings) so that ThreadSanitizer, which holds a signal until the
  // thread enters its runtime, delivers the ticks.
  const char* code[2] = {R"as(
    void left() { array<string> keep; for (int i = 0; i < 300000; i++) { keep.insertLast("l" + i); if (keep.length() > 50) keep.resize(0); } }
  )as", R"as(
    void right() { array<string> keep; for (int i = 0; i < 300000; i++) { keep.insertLast("r" + i); if (keep.length() > 50) keep.resize(0); } }
  )as"};
  const char* entry[2] = {"void left()", "void right()"};
  std::shared_ptr<Profile> profiles[2];
  std::string errors[2];
  int results[2] = {-1, -1};
  std::thread threads[2];
  for (int t = 0; t < 2; ++t)
    threads[t] = std::thread([&, t] {
      {
        Script s(code[t]);
        AngelScriptSampler sampler;
        if (!s.built) errors[t] = "the script did not build";
        else if (sampler.start(at_hz(2000), &errors[t])) {
          results[t] = s.run(entry[t]);
          sampler.stop();
          profiles[t] = sampler.shared_profile(SampleKind::Time);
        }
      }
      asThreadCleanup();  // AngelScript's per-thread data, as its manual asks of every thread
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) {
    INFO("thread " << t << ": " << errors[t]);
    REQUIRE(results[t] == asEXECUTION_FINISHED);
    REQUIRE(profiles[t]);
    CHECK(profiles[t]->sample_weight() > 20);
    // Each thread's samples are its own script's.
    CHECK(cumulative(*profiles[t], t == 0 ? "left()" : "right()") > 0);
    CHECK(cumulative(*profiles[t], t == 0 ? "right()" : "left()") == 0);
  }
}
