#include "scriptprof/profile_server.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof {

bool ServedEngine::start(SamplerEngine& engine, const std::string& address, ServedRun about, std::string* error) {
  if (serving()) {
    *error = "already serving at " + server_.address();
    return false;
  }
  about.feed = std::make_shared<LiveFeed>();
  about.clock = engine.settings().clock;
  about.default_period_ns = engine.settings().period_ns;
  about.set_period = [&engine](std::uint64_t period_ns) { engine.set_tick_period(period_ns); };
  engine.set_live_feed(about.feed);
  if (!server_.start(address, std::move(about), error)) {
    engine.set_live_feed(nullptr);
    return false;
  }
  engine_ = &engine;
  return true;
}

void ServedEngine::stop() {
  server_.stop();
  if (engine_) engine_->set_live_feed(nullptr);
  engine_ = nullptr;
}

void make_served(RunSettings& settings) {
  settings.ticks_paused = true;
  settings.start_sampling = true;
  settings.max_samples = 0;
}

}  // namespace scriptprof
