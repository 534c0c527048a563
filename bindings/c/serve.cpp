#include "scriptprof/serve.hpp"

#include "scriptprof/profile_server.hpp"

namespace scriptprof {

bool serve(Profiler& profiler, const std::string& address, std::string* error, Failure* kind,
           const ServeSettings& settings) {
  if (kind) *kind = Failure::Misuse;
  if (!profiler.serving_address().empty()) {
    *error = "serve: already serving at " + profiler.serving_address();
    return false;
  }
  std::string why, host;
  int port = 0;
  if (!parse_listen_address(address, &host, &port, &why)) {
    *error = "serve: " + why;
    return false;
  }
  auto server = std::make_shared<ProfileServer>(settings);
  if (!server->start(address, &why)) {
    if (kind) *kind = Failure::System;  // past the checks, only the system refuses
    *error = "serve: " + why;
    return false;
  }
  if (!profiler.set_server(server, error)) {  // a session running: the caller's
    server->stop();
    return false;
  }
  return true;
}

}  // namespace scriptprof
