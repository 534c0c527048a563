#include "scriptprof/profile_server.hpp"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/live_profile.hpp"
#include "scriptprof/profile_merge.hpp"

namespace scriptprof {

namespace {

constexpr std::int64_t kDefaultSeconds = 30;  // Go's default (and what seconds=0 means there)
constexpr std::int64_t kMaxSeconds = 3600;
constexpr std::int64_t kMaxHz = 100'000;      // the timer's own limit (run options)
constexpr int kWorkers = 4;                   // requests at once; a slow client holds one 5 s at most

bool parse_port(const std::string& text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  if (n > 65535) return false;
  *port = n;
  return true;
}

// A whole number in [lo, hi] from a query parameter; false with the reason.
bool parse_bounded(const std::string& name, const std::string& text, std::int64_t lo, std::int64_t hi,
                   std::int64_t* out, std::string* error) {
  bool digits = !text.empty() && text.size() <= 18;
  std::size_t i = text[0] == '-' ? 1 : 0;
  digits = digits && i < text.size();
  std::int64_t n = 0;
  for (; digits && i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') digits = false;
    else n = n * 10 + (text[i] - '0');
  }
  if (!digits) {
    *error = name + "=" + text + " is not a whole number";
    return false;
  }
  if (text[0] == '-') n = -n;
  if (n < lo || n > hi) {
    *error = name + "=" + text + " is out of range: give " + std::to_string(lo) + " to " + std::to_string(hi);
    return false;
  }
  *out = n;
  return true;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

bool parse_listen_address(const std::string& text, std::string* host, int* port, std::string* error) {
  std::string h, p;
  if (!text.empty() && text[0] == '[') {  // [v6]:port
    const std::size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "'" + text + "' is not an address: give HOST:PORT, [IPv6]:PORT or :PORT";
      return false;
    }
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
  } else if (const std::size_t colon = text.rfind(':'); colon != std::string::npos) {
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
    if (h.find(':') != std::string::npos) {
      *error = "'" + text + "': write an IPv6 address in brackets, [::1]:6060";
      return false;
    }
  } else {
    p = text;  // a port alone
  }
  if (!parse_port(p, port)) {
    *error = "'" + text + "' has no port from 0 to 65535: give HOST:PORT, for example 127.0.0.1:6060";
    return false;
  }
  *host = h.empty() ? "127.0.0.1" : h;  // loopback unless an address is given
  return true;
}

// A run as the server holds it: a request calls set_period only under `mutex` and while the
// run is not removed, so remove_run() returning means no call of the run is made again.
struct ServedEntry {
  ServedRun run;
  std::mutex mutex;
  bool removed = false;      // under mutex
  LiveProfileBuilder builder;  // under the server's collecting mutex
  void set_period(std::uint64_t period_ns) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!removed) run.set_period(period_ns);
  }
};

struct ProfileServer::Impl {
  httplib::Server http;
  std::thread thread;
  std::string host;
  int port = 0;
  std::mutex runs_mutex;
  std::map<std::uint64_t, std::shared_ptr<ServedEntry>> runs;  // under runs_mutex
  std::uint64_t next_run = 1;                                  // under runs_mutex
  std::mutex collecting;       // one CPU profile at a time
  std::mutex stop_mutex;
  std::condition_variable stop_wake;
  bool stopping = false;       // under stop_mutex
  std::atomic<bool> listener_done{false};

  void routes();
  void index(httplib::Response& res);
  void profile(const httplib::Request& req, httplib::Response& res);
  std::vector<std::shared_ptr<ServedEntry>> current_runs() {
    std::lock_guard<std::mutex> lock(runs_mutex);
    std::vector<std::shared_ptr<ServedEntry>> out;
    for (const auto& [id, entry] : runs) out.push_back(entry);
    return out;
  }
  // Waits `seconds`; false when the server is stopping.
  bool wait(std::chrono::steady_clock::duration d) {
    std::unique_lock<std::mutex> lock(stop_mutex);
    return !stop_wake.wait_for(lock, d, [this] { return stopping; });
  }
};

void ProfileServer::Impl::index(httplib::Response& res) {
  const auto served = current_runs();
  const TimerClock clock = served.empty() ? TimerClock::Cpu : served.front()->run.clock;
  const std::uint64_t period = served.empty() ? 10'000'000 : served.front()->run.default_period_ns;
  std::string page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>/debug/pprof/</title></head><body>\n";
  page += "<h1>/debug/pprof/</h1>\n<p>Sampled on the " + std::string(clock == TimerClock::Cpu ? "CPU" : "wall") +
          " clock by scriptprof: " + std::to_string(served.size()) + (served.size() == 1 ? " run" : " runs") + ".</p>\n<ul>\n";
  for (const auto& entry : served) {
    page += "<li>" + html_escape(entry->run.program) + " (" + html_escape(entry->run.runtime) + ")";
    if (!entry->run.note.empty()) page += ". " + html_escape(entry->run.note);
    page += "</li>\n";
  }
  page += "</ul>\n<table>\n<tr><td><a href=\"profile?seconds=30\">profile</a></td><td>" +
          std::string(clock == TimerClock::Cpu ? "CPU" : "Wall-clock") +
          " profile of the next seconds of every run (seconds=N, default 30; hz=H, default " +
          std::to_string(1'000'000'000 / std::max<std::uint64_t>(1, period)) +
          "). After you get the profile file, use the go tool pprof command to investigate it.</td></tr>\n</table>\n";
  page += "<p>Try <code>go tool pprof -http=: http://" + html_escape(host) + ":" + std::to_string(port) +
          "/debug/pprof/profile?seconds=10</code></p>\n</body></html>\n";
  res.set_content(page, "text/html; charset=utf-8");
}

void ProfileServer::Impl::profile(const httplib::Request& req, httplib::Response& res) {
  auto refuse = [&](int status, const std::string& why) {
    res.status = status;
    res.set_content(why + "\n", "text/plain; charset=utf-8");
  };
  std::string error;
  std::int64_t seconds = kDefaultSeconds;
  if (req.has_param("seconds") && !parse_bounded("seconds", req.get_param_value("seconds"), 0, kMaxSeconds, &seconds, &error))
    return refuse(400, error);
  if (seconds == 0) seconds = kDefaultSeconds;  // as Go reads it
  std::int64_t hz = 0;
  if (req.has_param("hz") && !parse_bounded("hz", req.get_param_value("hz"), 1, kMaxHz, &hz, &error))
    return refuse(400, error);
  std::vector<std::shared_ptr<ServedEntry>> served = current_runs();
  if (served.empty()) return refuse(503, "no run is served now: nothing to profile");
  const TimerClock clock = served.front()->run.clock;
  const char* ours = clock == TimerClock::Cpu ? "cpu" : "wall";
  if (req.has_param("clock")) {
    const std::string asked = req.get_param_value("clock");
    if (asked != "cpu" && asked != "wall") return refuse(400, "clock=" + asked + " is not a clock: give cpu or wall");
    if (asked != ours)
      return refuse(400, "this program is served on the " + std::string(ours) + " clock: start serving with clock=" +
                             asked + " for " + asked + " profiles");
  }
  std::unique_lock<std::mutex> one(collecting, std::try_to_lock);
  if (!one.owns_lock())  // Go's status for the same refusal
    return refuse(500, "Could not enable CPU profiling: a profile is already being collected (one at a time)");
  const std::uint64_t start_unix_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  const auto began = std::chrono::steady_clock::now();
  for (const auto& entry : served) {
    entry->builder.learn(entry->run.feed->take());  // names so far; samples from before the window go
    entry->set_period(hz ? 1'000'000'000ull / static_cast<std::uint64_t>(hz) : entry->run.default_period_ns);
  }
  const bool whole = wait(std::chrono::seconds(seconds));
  for (const auto& entry : served) entry->set_period(0);
  if (!whole) return refuse(503, "the profile server is stopping");
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  Profile all;
  for (const auto& entry : served) {
    if (entry->run.clock != clock) continue;
    LiveFeed::Batch batch = entry->run.feed->take();
    entry->builder.learn(batch);
    Profile p = entry->builder.build(batch, entry->run.program, clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall,
                                     elapsed);
    if (entry->run.process_names)
      for (const auto& [id, name] : entry->run.process_names()) p.add_thread(id, name);
    merge_profile(&all, p);
  }
  all.name = served.size() == 1 ? served.front()->run.program : "scriptprof";
  all.total_seconds = elapsed;  // the window, as Go's duration; the runs' time is in the samples
  all.start_unix_ns = start_unix_ns;
  res.set_header("Content-Disposition", "attachment; filename=\"profile\"");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(write_pprof(all), "application/octet-stream");
}

void ProfileServer::Impl::routes() {
  auto index_page = [this](const httplib::Request&, httplib::Response& res) { index(res); };
  http.Get("/debug/pprof/", index_page);
  http.Get("/debug/pprof", index_page);
  http.Get("/debug/pprof/profile", [this](const httplib::Request& req, httplib::Response& res) { profile(req, res); });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404)
      res.set_content("no page " + req.path + " here: the profiles are listed at /debug/pprof/\n",
                      "text/plain; charset=utf-8");
  });
  // A client that sends half a request, or reads nothing, lets go of its worker in seconds.
  http.set_read_timeout(5, 0);
  http.set_write_timeout(10, 0);
  http.set_keep_alive_timeout(5);
  http.set_payload_max_length(64 * 1024);
  http.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
  // SO_REUSEADDR alone: cpp-httplib's default adds SO_REUSEPORT, with which a second server
  // binds the same port and the kernel shares the clients between the two programs.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

ProfileServer::ProfileServer() : impl_(std::make_unique<Impl>()) {}

ProfileServer::~ProfileServer() { stop(); }

bool ProfileServer::start(const std::string& address, ServedRun run, std::string* error) {
  if (!run.feed || !run.set_period) {
    *error = "nothing to serve";
    return false;
  }
  if (!start(address, error)) return false;
  add_run(std::move(run));
  return true;
}

bool ProfileServer::start(const std::string& address, std::string* error) {
  if (impl_->thread.joinable()) {
    *error = "already serving at " + this->address();
    return false;
  }
  std::string host;
  int port = 0;
  if (!parse_listen_address(address, &host, &port, error)) return false;
  // A server stopped before starts afresh, with the runs it serves.
  auto fresh = std::make_unique<Impl>();
  {
    std::lock_guard<std::mutex> lock(impl_->runs_mutex);
    fresh->runs = impl_->runs;
    fresh->next_run = impl_->next_run;
  }
  impl_ = std::move(fresh);
  impl_->routes();
  errno = 0;
  const int bound = port == 0 ? impl_->http.bind_to_any_port(host) : impl_->http.bind_to_port(host, port) ? port : -1;
  if (bound < 0) {
    const int why = errno;
    *error = "cannot listen on " + address + (why ? std::string(": ") + std::strerror(why) : std::string());
    return false;
  }
  impl_->host = host;
  impl_->port = bound;
  // The server's threads (the listener and the workers it starts) take none of the program's
  // signals: a process-directed signal still reaches a thread of the program's, and a write to
  // a client gone away fails with EPIPE here instead of raising SIGPIPE in the host.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    impl_->thread = std::thread([impl = impl_.get()] {
      impl->http.listen_after_bind();
      impl->listener_done = true;
    });
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    *error = std::string("the server's thread: ") + e.what();
    return false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

std::uint64_t ProfileServer::add_run(ServedRun run) {
  auto entry = std::make_shared<ServedEntry>();
  entry->run = std::move(run);
  std::lock_guard<std::mutex> lock(impl_->runs_mutex);
  const std::uint64_t id = impl_->next_run++;
  impl_->runs[id] = std::move(entry);
  return id;
}

void ProfileServer::remove_run(std::uint64_t id) {
  std::shared_ptr<ServedEntry> entry;
  {
    std::lock_guard<std::mutex> lock(impl_->runs_mutex);
    auto it = impl_->runs.find(id);
    if (it == impl_->runs.end()) return;
    entry = std::move(it->second);
    impl_->runs.erase(it);
  }
  std::lock_guard<std::mutex> lock(entry->mutex);  // waits out a set_period under way
  entry->removed = true;
}

std::string ProfileServer::address() const {
  if (!impl_->thread.joinable()) return "";
  const bool v6 = impl_->host.find(':') != std::string::npos;
  return (v6 ? "[" + impl_->host + "]" : impl_->host) + ":" + std::to_string(impl_->port);
}

bool ProfileServer::serving() const { return impl_->thread.joinable(); }

void ProfileServer::stop() {
  if (!impl_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mutex);
    impl_->stopping = true;
  }
  impl_->stop_wake.notify_all();
  // Server::stop() closes the socket only once listening began: wait for that (or its end).
  while (!impl_->http.is_running() && !impl_->listener_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();  // listen_after_bind returns once its workers finished their requests
  impl_->thread.join();
  for (const auto& entry : impl_->current_runs()) entry->set_period(0);
}

}  // namespace scriptprof
