// The tiny interpreter sample: its adapter gives full statprof semantics through the engine.
#include <catch2/catch.hpp>

#include <string>

#include "../core/function_lookup.hpp"
#include "scriptprof/profile.hpp"
#include "tiny_adapter.hpp"

namespace {

const char* kProgram = R"(def main
  repeat 1000 frame
def frame
  call hot
  call cold
def hot
  spin 150000
  call deep
def deep
  recurse 4
  spin 20000
def cold
  spin 50000
)";

scriptprof::FunctionId id_of(const scriptprof::Profile& p, const std::string& name) {
  scriptprof::FunctionId f = scriptprof::test::function_named(p, name);
  if (f == scriptprof::kNoFunction) FAIL("no function " << name);
  return f;
}

}  // namespace

TEST_CASE("tiny interpreter: samples, shares, recursion once per stack, exact calls") {
  tiny::Vm vm;
  std::string error;
  REQUIRE(vm.load(kProgram, &error));
  tiny::TinyAdapter profiler(vm);
  scriptprof::RunSettings settings;
  settings.period_ns = 1'000'000;  // 1 kHz
  settings.count_calls = true;
  REQUIRE(profiler.start(settings, &error));
  vm.run();
  profiler.stop();
  const scriptprof::Profile& p = profiler.profile();
  CHECK(scriptprof::check_invariants(p).empty());
  const std::uint64_t n = p.sample_count();
  REQUIRE(n >= 30);
  auto self = [&](const char* name) { return static_cast<double>(p.counts(id_of(p, name)).self) / static_cast<double>(n); };
  // hot 150k, deep 4 x 20k = 80k, cold 50k of 280k iterations: 54%, 29%, 18% (wide bounds:
  // a loaded machine and a few hundred samples; 1000 frames, as 200 gave a fast machine only
  // 41 samples and hot 34%).
  CHECK(self("hot") > 0.35);
  CHECK(self("hot") < 0.75);
  CHECK(self("deep") > 0.12);
  CHECK(self("cold") > 0.05);
  CHECK(self("cold") < self("hot"));
  // Every sample is in main; deep recurses 4 deep but counts once per sample.
  CHECK(p.counts(id_of(p, "main")).cumulative == n);
  CHECK(p.counts(id_of(p, "deep")).cumulative <= n);
  CHECK(p.counts(id_of(p, "deep")).occurrences > p.counts(id_of(p, "deep")).cumulative);
  // Exact calls from the interpreter's call hook.
  CHECK(p.counts(id_of(p, "main")).calls == 1u);
  CHECK(p.counts(id_of(p, "hot")).calls == 1000u);
  CHECK(p.counts(id_of(p, "deep")).calls == 4000u);
  CHECK(p.counts(id_of(p, "cold")).calls == 1000u);
}

TEST_CASE("tiny interpreter: bad programs name the line at fault") {
  tiny::Vm vm;
  std::string error;
  CHECK_FALSE(vm.load("def main\n  call nowhere\n", &error));
  CHECK(error == "line 2: no function 'nowhere'");
  tiny::Vm vm2;
  CHECK_FALSE(vm2.load("def main\n  spin -3\n", &error));
  CHECK(error == "line 2: spin needs a count >= 0");
  tiny::Vm vm3;
  CHECK_FALSE(vm3.load("def helper\n  spin 1\n", &error));
  CHECK(error == "line 2: no function 'main'");
}
