// What passes between the profile server (profile_server.hpp: its pages and runs, in the core)
// and the HTTP library that carries its requests (cpp-httplib, in a shared object of its own,
// libscriptprof_httplib.so, opened at the first serve: http_transport_loader.hpp). Only these
// types and the standard library cross between the two, so the library and everything it
// brings (libssl, libcrypto, brotli: 2.7 ms of every process that loads the module) is loaded
// by a process that serves, and by no other.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace scriptprof {

// One request: its method ("GET" for HEAD too), path and query parameters.
struct HttpRequest {
  std::string method;
  std::string path;
  std::multimap<std::string, std::string> params;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  // The first value of `name`; empty when absent.
  std::string get_param_value(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  }
};

// Its answer: status, body with its type, and any other headers.
struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  void set_content(std::string content, std::string type) {
    body = std::move(content);
    content_type = std::move(type);
  }
  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
};

// Every request of every method goes to one handler, from the transport's worker threads.
using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

// A listening HTTP server. Its threads take none of the program's signals only if the caller
// blocks them around listen()'s thread start (the threads it makes inherit the mask).
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Binds `host`:`port` (0: any free port); the port bound, or -1 with errno set.
  virtual int bind(const std::string& host, int port) = 0;
  // Serves the bound socket until stop(); blocks (a thread of the caller's runs it).
  virtual void listen() = 0;
  // Listening has begun (stop() can end it).
  virtual bool is_running() const = 0;
  // Stops listening; listen() returns once the requests under way are answered.
  virtual void stop() = 0;
};

// The entry point the shared object exports (extern "C", by this name): a transport that hands
// each request to `handler`, which must outlive it. The name carries the version of the types
// above: a change to them is a new name, so an older library installed elsewhere is refused.
using HttpTransportFactory = HttpTransport* (*)(const HttpHandler* handler);
inline constexpr const char* kHttpTransportSymbol = "scriptprof_http_transport_v1";

}  // namespace scriptprof
