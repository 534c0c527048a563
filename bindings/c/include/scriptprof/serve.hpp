// Serving a host's profiles (C++): link scriptprof::serve, which the C API's scriptprof_serve
// uses too (its HTTP, cpp-httplib, is opened at the first serve: http_exchange.hpp).
#pragma once
#include <string>

#include "scriptprof/live_collection.hpp"
#include "scriptprof/profiler.hpp"

namespace scriptprof {

// Serves Go's /debug/pprof endpoints at `address` ("127.0.0.1:6060"; ":0" any free port):
// `go tool pprof http://ADDRESS/debug/pprof/profile?seconds=30` profiles every session of
// `profiler` started from now on (Profiler::set_server). `settings` turn continuous mode on.
// False with the reason; `kind` (if given) says whose it was (System: the port is taken).
bool serve(Profiler& profiler, const std::string& address, std::string* error, Failure* kind = nullptr,
           const ServeSettings& settings = {});

}  // namespace scriptprof
