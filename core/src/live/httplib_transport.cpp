// libscriptprof_httplib.so: the profile server's HTTP on Debian's cpp-httplib, opened by the
// core at the first serve (http_transport_loader.cpp). It holds nothing of the core: requests
// go to the handler as HttpRequest, answers come back as HttpResponse (http_exchange.hpp).
#include <httplib.h>

#include "scriptprof/http_exchange.hpp"

namespace scriptprof {
namespace {

constexpr int kWorkers = 4;  // requests at once; a slow client holds one 5 s at most

class HttplibTransport final : public HttpTransport {
 public:
  explicit HttplibTransport(const HttpHandler& handler) : handler_(handler) {
    // Every method and path goes to the handler, which routes and says 404 itself.
    auto pass = [this](const httplib::Request& req, httplib::Response& res) { forward(req, res); };
    http_.Get(".*", pass);  // HEAD too
    http_.Post(".*", pass);
    http_.Put(".*", pass);
    http_.Delete(".*", pass);
    http_.Patch(".*", pass);
    http_.Options(".*", pass);
    // A client that sends half a request, or reads nothing, lets go of its worker in seconds.
    http_.set_read_timeout(5, 0);
    http_.set_write_timeout(10, 0);
    http_.set_keep_alive_timeout(5);
    http_.set_payload_max_length(64 * 1024);
    http_.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
    // SO_REUSEADDR alone: cpp-httplib's default adds SO_REUSEPORT, with which a second server
    // binds the same port and the kernel shares the clients between the two programs.
    http_.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
  }

  int bind(const std::string& host, int port) override {
    if (port == 0) return http_.bind_to_any_port(host);
    return http_.bind_to_port(host, port) ? port : -1;
  }
  void listen() override { http_.listen_after_bind(); }
  bool is_running() const override { return http_.is_running(); }
  void stop() override { http_.stop(); }

 private:
  void forward(const httplib::Request& req, httplib::Response& res) {
    HttpRequest request;
    request.method = req.method == "HEAD" ? "GET" : req.method;
    request.path = req.path;
    request.params.insert(req.params.begin(), req.params.end());
    HttpResponse response;
    handler_(request, response);
    res.status = response.status;
    for (auto& [name, value] : response.headers) res.set_header(name, value);
    if (!response.content_type.empty() || !response.body.empty())
      res.set_content(response.body, response.content_type);
  }

  const HttpHandler& handler_;
  httplib::Server http_;
};

}  // namespace
}  // namespace scriptprof

extern "C" __attribute__((visibility("default"))) scriptprof::HttpTransport* scriptprof_http_transport_v1(
    const scriptprof::HttpHandler* handler) {
  try {
    return new scriptprof::HttplibTransport(*handler);
  } catch (const std::exception&) {
    return nullptr;  // out of memory: the loader says the server could not be made
  }
}
