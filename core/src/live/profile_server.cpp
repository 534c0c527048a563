#include "scriptprof/profile_server.hpp"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "http_transport_loader.hpp"
#include "server_impl.hpp"

namespace scriptprof {

namespace {

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

ProfileServer::ProfileServer(const ServeSettings& settings)
    : collection_(std::make_shared<LiveCollection>(settings)), impl_(std::make_unique<Impl>(collection_)) {}

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
  impl_ = std::make_unique<Impl>(collection_);  // a server stopped before starts afresh, with its runs
  impl_->http = open_http_transport(impl_->handler, error);
  if (!impl_->http) return false;
  errno = 0;
  const int bound = impl_->http->bind(host, port);
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
      impl->http->listen();
      impl->listener_done = true;
    });
    // Always: continuous sampling can be started from the live page.
    impl_->collector = std::thread([impl = impl_.get()] { impl->collect_continuously(); });
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    *error = std::string("the server's thread: ") + e.what();
    if (impl_->thread.joinable()) stop();
    return false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
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
  while (!impl_->http->is_running() && !impl_->listener_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http->stop();  // listen() returns once its workers finished their requests
  impl_->thread.join();
  if (impl_->collector.joinable()) impl_->collector.join();
  collection_->pause_all();
}

}  // namespace scriptprof
