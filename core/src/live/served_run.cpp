#include "scriptprof/run_server.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof {

std::uint64_t serve_engine(RunServer& server, SamplerEngine& engine, ServedRun about) {
  about.feed = std::make_shared<LiveFeed>();
  about.clock = engine.settings().clock;
  about.default_period_ns = engine.settings().period_ns;
  about.heap_sample_bytes = engine.tracks_heap() ? engine.settings().alloc_bytes : 0;
  about.set_period = [&engine](std::uint64_t period_ns) { engine.set_tick_period(period_ns); };
  engine.set_live_feed(about.feed);
  return server.add_run(std::move(about));
}

void unserve_engine(RunServer& server, SamplerEngine& engine, std::uint64_t run) {
  server.remove_run(run);
  engine.set_live_feed(nullptr);
}

void make_served(RunSettings& settings) {
  settings.served = true;
  settings.ticks_paused = true;
  settings.start_sampling = true;
  settings.max_samples = 0;
}

}  // namespace scriptprof
