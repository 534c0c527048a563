// build/bin/scriptprof_angelscript_bench [--quick]: the AngelScript adapter's rows, in one run.
// On a known 75/25 split (heavy() does three times light()'s work, each calling a registered
// function now and then): the worst error of the split in percentage points, the rate (samples
// per second of the run, asked for --hz), and the overhead: the script's thread CPU time
// profiled / plain ("x"), and the process's ("proc x": the timer thread's wake-ups included),
// medians of interleaved rounds. bench.sh runs it.
#include <angelscript.h>
#include <scriptmath.h>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "angelscript_sampler.hpp"
#include "quick_flag.hpp"

using namespace scriptprof::angelscript;  // and AngelScript's namespace, where it has one

namespace {

const char* kSplit = R"as(
  float spin(int n) { float x = 0; for (int i = 0; i < n; i++) { x += float(i % 7); if (i % 64 == 0) x = sqrt(x); } return x; }
  float heavy(int n) { return spin(3 * n); }
  float light(int n) { return spin(n); }
  void main(int n, int rounds) { for (int r = 0; r < rounds; r++) { heavy(n); light(n); } }
)as";

double cpu_seconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  double seconds = 0, process_seconds = 0, heavy = 0, light = 0, samples = 0, profile_seconds = 0;
};

// One run of main(n, rounds), under a sampler at `hz` (0: none).
Result run(asIScriptEngine* engine, asIScriptFunction* main_fn, int n, int rounds, unsigned hz) {
  asIScriptContext* ctx = engine->CreateContext();
  AngelScriptSampler sampler;
  Result r;
  if (hz) {
    scriptprof::RunSettings s;
    s.period_ns = 1'000'000'000u / hz;
    std::string error;
    if (!sampler.start(s, &error)) {
      std::fprintf(stderr, "cannot start: %s\n", error.c_str());
      std::exit(1);
    }
  }
  ctx->Prepare(main_fn);
  ctx->SetArgDWord(0, static_cast<asDWORD>(n));
  ctx->SetArgDWord(1, static_cast<asDWORD>(rounds));
  double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID), p0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  int status = execute(ctx);
  r.seconds = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
  if (hz) sampler.stop();  // the timer thread's last wake-ups belong to the run
  r.process_seconds = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - p0;
  if (status != asEXECUTION_FINISHED) {
    std::fprintf(stderr, "main() did not finish: %d\n", status);
    std::exit(1);
  }
  if (hz) {
    const scriptprof::Profile& p = sampler.profile(scriptprof::SampleKind::Time);
    for (scriptprof::FunctionId f = 0; f < p.functions.size(); ++f) {
      if (p.functions.info(f).name == "heavy(int)") r.heavy = static_cast<double>(p.counts(f).cumulative);
      if (p.functions.info(f).name == "light(int)") r.light = static_cast<double>(p.counts(f).cumulative);
    }
    r.samples = static_cast<double>(p.sample_weight());
    r.profile_seconds = p.total_seconds;
  }
  ctx->Release();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = quick_flag(argc, argv);
  const int rounds = quick ? 1 : 5;
  const int n = quick ? 400000 : 1000000, repeat = quick ? 5 : 40;
  asIScriptEngine* engine = asCreateScriptEngine();
  RegisterScriptMath(engine);
  asIScriptModule* mod = engine->GetModule("bench", asGM_ALWAYS_CREATE);
  mod->AddScriptSection("split.as", kSplit);
  if (mod->Build() < 0) return 1;
  asIScriptFunction* main_fn = mod->GetFunctionByDecl("void main(int, int)");

  std::printf("== AngelScript adapter (suspend and resume), 75/25 split, medians of %d\n", rounds);
  std::printf("%-8s %12s %10s %9s %9s\n", "hz", "err pp", "Hz", "x", "proc x");
  bool sane = true;
  for (unsigned hz : {100u, 1000u, 10000u}) {
    std::vector<double> plain, profiled, plain_process, profiled_process;
    double err = 0, rate = 0;
    for (int i = 0; i < rounds; ++i) {
      Result base = run(engine, main_fn, n, repeat, 0);  // interleaved: same machine state
      plain.push_back(base.seconds);
      plain_process.push_back(base.process_seconds);
      Result r = run(engine, main_fn, n, repeat, hz);
      profiled.push_back(r.seconds);
      profiled_process.push_back(r.process_seconds);
      double share = r.heavy + r.light > 0 ? 100.0 * r.heavy / (r.heavy + r.light) : 0;
      err = std::max(err, std::fabs(share - 75.0));
      double this_rate = r.profile_seconds > 0 ? r.samples / r.profile_seconds : 0;
      if (i == 0 || std::fabs(this_rate - hz) > std::fabs(rate - hz)) rate = this_rate;  // the worst round
      sane = sane && r.heavy + r.light > 0;
    }
    std::printf("%-8u %12.2f %10.0f %9.3f %9.3f\n", hz, err, rate, median(profiled) / median(plain),
                median(profiled_process) / median(plain_process));
  }
  engine->ShutDownAndRelease();
  if (quick && !sane) {
    std::fprintf(stderr, "angelscript bench: no samples of the split\n");
    return 1;
  }
  return 0;
}
