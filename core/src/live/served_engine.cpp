#include "scriptprof/profile_server.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof {

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


}  // namespace scriptprof
