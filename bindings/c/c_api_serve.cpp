// scriptprof_serve and scriptprof_serve_continuous: in scriptprof::serve's library (the
// profile server), which a host links when it serves.
#include "c_api_internal.hpp"
#include "scriptprof/serve.hpp"

using scriptprof::c_api::failed;
using scriptprof::c_api::guarded;

scriptprof_status scriptprof_serve(scriptprof_profiler* p, const char* address) {
  SCRIPTPROF_REQUIRE(p && address, "scriptprof_serve: profiler or address is NULL");
  return guarded("scriptprof_serve", [&] {
    std::string error;
    scriptprof::Failure kind = scriptprof::Failure::Misuse;
    if (scriptprof::serve(p->profiler, address, &error, &kind)) return SCRIPTPROF_OK;
    return failed(kind == scriptprof::Failure::System ? SCRIPTPROF_SYSTEM_ERROR : SCRIPTPROF_INVALID_ARGUMENT,
                  "scriptprof_" + error);
  });
}

scriptprof_status scriptprof_serve_continuous(scriptprof_profiler* p, const char* address, double hz,
                                              unsigned window_seconds) {
  SCRIPTPROF_REQUIRE(p && address, "scriptprof_serve_continuous: profiler or address is NULL");
  SCRIPTPROF_REQUIRE(hz > 0 && hz <= 1000, "scriptprof_serve_continuous: hz must be from 0 to 1000 (19 is usual)");
  SCRIPTPROF_REQUIRE(window_seconds <= 86400, "scriptprof_serve_continuous: window_seconds must be at most 86400");
  return guarded("scriptprof_serve_continuous", [&] {
    scriptprof::ServeSettings settings;
    settings.continuous_hz = hz;
    if (window_seconds) settings.window_seconds = window_seconds;
    std::string error;
    scriptprof::Failure kind = scriptprof::Failure::Misuse;
    if (scriptprof::serve(p->profiler, address, &error, &kind, settings)) return SCRIPTPROF_OK;
    return failed(kind == scriptprof::Failure::System ? SCRIPTPROF_SYSTEM_ERROR : SCRIPTPROF_INVALID_ARGUMENT,
                  "scriptprof_" + error);
  });
}

