// What the C API's files share (c_api.cpp, and c_api_serve.cpp in scriptprof::serve): the
// handles' insides, the calling thread's message, and the guard that turns exceptions into
// statuses. Internal to bindings/c.
#pragma once
#include <exception>
#include <new>
#include <string>

#include "scriptprof.h"
#include "scriptprof/profiler.hpp"

struct scriptprof_profiler {
  scriptprof::Profiler profiler;
  std::string address;  // scriptprof_serving_address's text
  explicit scriptprof_profiler(const scriptprof::ProfilerOptions& o) : profiler(o) {}
};

namespace scriptprof::c_api {

// Sets the calling thread's message (scriptprof_error) and returns `status`.
scriptprof_status failed(scriptprof_status status, std::string message);

// Runs fn, turning exceptions into statuses: nothing propagates into C.
template <class Fn>
scriptprof_status guarded(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return failed(SCRIPTPROF_OUT_OF_MEMORY, std::string(what) + ": out of memory");
  } catch (const std::exception& e) {
    return failed(SCRIPTPROF_SYSTEM_ERROR, std::string(what) + ": " + e.what());
  } catch (...) {
    return failed(SCRIPTPROF_SYSTEM_ERROR, std::string(what) + ": unexpected error");
  }
}

}  // namespace scriptprof::c_api

#define SCRIPTPROF_REQUIRE(cond, what)                                                            \
  do {                                                                                            \
    if (!(cond)) return scriptprof::c_api::failed(SCRIPTPROF_INVALID_ARGUMENT, what);             \
  } while (0)
