// Finds and opens libscriptprof_httplib.so (http_exchange.hpp says why it is a shared object of
// its own) and makes a transport from it.
#pragma once
#include <memory>
#include <string>

#include "scriptprof/http_exchange.hpp"

namespace scriptprof {

// A transport handing requests to `handler` (which must outlive it); null with the reason
// (which files were tried, and why each failed) when the library cannot be opened. The library
// is looked for in $SCRIPTPROF_HTTP_LIBRARY (a file) if set, else beside the object holding this
// code (the Lua module, a tool, a host) and up to three folders above it, in `lib/` there, then
// where the installation put it. Opened once per process, never closed.
std::unique_ptr<HttpTransport> open_http_transport(const HttpHandler& handler, std::string* error);

}  // namespace scriptprof
