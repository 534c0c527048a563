// The profile server's insides, shared by its lifecycle (profile_server.cpp) and its pages
// (server_pages.cpp). Private to core/src/live. Its HTTP is a transport from a library of its
// own (http_transport_loader.hpp), which hands every request to route().
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "scriptprof/http_exchange.hpp"
#include "scriptprof/profile_server.hpp"

namespace scriptprof {

constexpr std::int64_t kDefaultSeconds = 30;  // Go's default (and what seconds=0 means there)
constexpr std::int64_t kMaxSeconds = 3600;
constexpr std::int64_t kMaxHz = 100'000;      // the timer's own limit (run options)

// A whole number in [lo, hi] from a query parameter; false with the reason.
bool parse_bounded(const std::string& name, const std::string& text, std::int64_t lo, std::int64_t hi,
                   std::int64_t* out, std::string* error);

struct ProfileServer::Impl {
  explicit Impl(std::shared_ptr<LiveCollection> c) : collection(std::move(c)) {}
  std::shared_ptr<LiveCollection> collection;
  HttpHandler handler{[this](const HttpRequest& req, HttpResponse& res) { route(req, res); }};
  std::unique_ptr<HttpTransport> http;  // set by start()
  std::thread thread;     // the listener
  std::thread collector;  // continuous mode: drains the feeds twice a second
  std::string host;
  int port = 0;
  std::mutex collecting;  // one CPU profile at a time
  std::mutex stop_mutex;
  std::condition_variable stop_wake;
  bool stopping = false;  // under stop_mutex
  std::atomic<bool> listener_done{false};

  void route(const HttpRequest& req, HttpResponse& res);
  void index(HttpResponse& res);
  void profile(const HttpRequest& req, HttpResponse& res);
  void recent(const HttpRequest& req, HttpResponse& res);
  void live(const HttpRequest& req, HttpResponse& res);
  void frames(const HttpRequest& req, HttpResponse& res);
  void frame(const HttpRequest& req, HttpResponse& res);
  void heap(const HttpRequest& req, HttpResponse& res, bool allocs);
  std::mutex last_frames_mutex;
  std::shared_ptr<const LiveCollection::Frames> last_frames;  // the last capture (under its mutex)
  double last_frames_seconds = 0, last_frames_hz = 0;
  void rate(const HttpRequest& req, HttpResponse& res);
  // Waits `d`; false when the server is stopping.
  bool wait(std::chrono::steady_clock::duration d) {
    std::unique_lock<std::mutex> lock(stop_mutex);
    return !stop_wake.wait_for(lock, d, [this] { return stopping; });
  }
  void collect_continuously() {
    while (wait(std::chrono::milliseconds(500))) collection->drain();
  }
};

}  // namespace scriptprof
