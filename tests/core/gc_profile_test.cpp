// The gc profile (a sample after each garbage collection) counts collections: its reports and
// files say so, and none turns its samples into seconds of a timer that never ticked for it.
#include <catch2/catch.hpp>

#include <string>

#include "scriptprof/allegro_report.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/sampler_engine.hpp"

using namespace scriptprof;

namespace {

// 30 collections: 20 in churn called from main, 10 in main itself; a 1 ms timer beside it.
Profile gc_profile() {
  Profile p;
  p.clock = ClockKind::Gc;
  p.period_ns = 1'000'000;
  p.total_seconds = 0.25;
  const FunctionId main_fn = p.add_function({"main", "gc.lua", 1, 0, FunctionKind::Script});
  const FunctionId churn = p.add_function({"churn", "gc.lua", 5, 0, FunctionKind::Script});
  const FunctionId deep[] = {main_fn, churn};
  for (int i = 0; i < 20; ++i) p.add_sample(0, 0, 1, deep, 2);
  for (int i = 0; i < 10; ++i) p.add_sample(0, 0, 1, deep, 1);
  return p;
}

struct NoArm : RuntimeAdapter, TickArm {
  Capabilities capabilities() const override {
    Capabilities c;
    c.runtime = "Fake 1.0";
    c.signal_arm = c.gc_events = true;
    return c;
  }
  TickArm& tick_arm() override { return *this; }
  ArmResult arm(const ArmContext&) override { return ArmResult::NotNow; }
  void disarm(const ArmContext&) override {}
};

}  // namespace

TEST_CASE("Allegro reports of a gc profile count whole collections, not seconds") {
  const Profile p = gc_profile();
  const std::string flat = allegro_flat_report(p, AllegroOptions{});
  CHECK(flat.find("Sample represents 30 garbage collections (out of a total of 30)") != std::string::npos);
  CHECK(flat.find("seconds") == std::string::npos);
  CHECK(flat.find(" GCs   Cum.    GCs    GCs") != std::string::npos);
  CHECK(flat.find("     20     20  ") != std::string::npos);  // churn: 20 self and total
  CHECK(flat.find("     10     30  ") != std::string::npos);  // main: 10 self, 30 total
  const std::string graph = allegro_call_graph(p, AllegroOptions{});
  CHECK(graph.find("Time profile") == std::string::npos);
  CHECK(graph.find("Sample represents 30 garbage collections") != std::string::npos);
  CHECK(graph.find("      20   66.7") != std::string::npos);  // a whole count, then its share
}

TEST_CASE("gprof styles refuse a gc profile, naming the styles that fit") {
  std::string out, error;
  for (const char* style : {"gprof", "gprof-callgraph"}) {
    CHECK_FALSE(render_report(gc_profile(), style, &out, &error));
    CHECK(error == std::string("report style '") + style +
                       "' shows time; for a gc profile use flat, tree, allegro or allegro-callgraph");
  }
}

TEST_CASE("A gc profile's files say it counts collections and read back as one") {
  const Profile p = gc_profile();
  const std::string raw = write_pprof(p, false);
  CHECK(raw.find("collections") != std::string::npos);
  CHECK(raw.find("nanoseconds") == std::string::npos);
  for (const char* format : {"lispworks", "folded", "speedscope", "sampler"}) {
    INFO(format);
    std::string text, error;
    REQUIRE(render_format(p, format, &text, &error));
    CHECK(text.find("clock=gc") != std::string::npos);
    Profile back;
    REQUIRE(read_profile_text(text, format, &back, &error));
    CHECK(back.clock == ClockKind::Gc);
    CHECK(back.sample_weight() == 30);
  }
}

TEST_CASE("The engine's gc profile counts collections on either clock") {
  for (TimerClock clock : {TimerClock::Cpu, TimerClock::Wall}) {
    NoArm adapter;
    SamplerEngine engine(&adapter);
    RunSettings s;
    s.period_ns = 10'000'000'000;  // the timer never ticks during the test
    s.clock = clock;
    s.gc_samples = true;
    std::string error;
    REQUIRE(engine.start(s, false, &error));
    engine.stop();
    CHECK(engine.profile(SampleKind::Gc).clock == ClockKind::Gc);
    CHECK(engine.profile(SampleKind::Time).clock == (clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall));
  }
}
