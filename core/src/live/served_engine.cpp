#include "scriptprof/profile_server.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof {

std::uint64_t serve_engine(ProfileServer& server, SamplerEngine& engine, ServedRun about) {
  about.feed = std::make_shared<LiveFeed>();
  about.clock = engine.settings().clock;
  about.default_period_ns = engine.settings().period_ns;
  about.set_period = [&engine](std::uint64_t period_ns) { engine.set_tick_period(period_ns); };
  engine.set_live_feed(about.feed);
  return server.add_run(std::move(about));
}

void unserve_engine(ProfileServer& server, SamplerEngine& engine, std::uint64_t run) {
  server.remove_run(run);
  engine.set_live_feed(nullptr);
}

bool ServedEngine::start(SamplerEngine& engine, const std::string& address, const ServeSettings& settings,
                         ServedRun about, std::string* error) {
  if (serving()) {
    *error = "already serving at " + server_->address();
    return false;
  }
  server_ = std::make_unique<ProfileServer>(settings);
  if (!server_->start(address, error)) {
    server_.reset();
    return false;
  }
  run_ = serve_engine(*server_, engine, std::move(about));
  engine_ = &engine;
  return true;
}

void ServedEngine::stop() {
  if (!server_) return;
  server_->stop();
  if (engine_) unserve_engine(*server_, *engine_, run_);
  engine_ = nullptr;
  server_.reset();
}

void make_served(RunSettings& settings) {
  settings.ticks_paused = true;
  settings.start_sampling = true;
  settings.max_samples = 0;
}

}  // namespace scriptprof
