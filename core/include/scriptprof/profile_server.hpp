// The profile server: Go's net/http/pprof endpoints inside the host, so that `go tool pprof
// http://127.0.0.1:6060/debug/pprof/profile?seconds=30` profiles a program that is already
// running. It serves runs (each a SamplerEngine started with ticks_paused and a live feed: a
// Lua state, a thread of a C host) from its own threads: a request sets every run's rate for
// its seconds and builds one profile from their feeds (LiveCollection), a process per thread
// and coroutine as the runs number them; the host's threads pay only the sampling asked for.
//
//   /debug/pprof/                             index
//   /debug/pprof/profile?seconds=N&hz=H       N seconds (default 30) of the runs' clock at H Hz,
//                                             gzipped pprof; one at a time, as Go's
//   /debug/scriptprof/recent?seconds=N        continuous mode: the last N seconds (default 30)
//   /debug/scriptprof/frames?seconds=N...     slow frames (frames_page.hpp), frame?id=I each
//   /debug/scriptprof/?seconds=N&refresh=R    the live page (live_page.hpp); POST rate?hz=H
//                                             starts (H > 0), changes or stops (0) continuous mode
// Bad parameters get 400 with the reason. The HTTP work is cpp-httplib's (Debian's).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "scriptprof/live_collection.hpp"
#include "scriptprof/run_server.hpp"

namespace scriptprof {

// "127.0.0.1:6060" from what a user typed: ":6060" and "6060" are loopback (only an address
// given in full listens beyond this machine), "[::1]:6060" an IPv6 one; port 0 asks for any
// free port. False with the reason for anything else.
bool parse_listen_address(const std::string& text, std::string* host, int* port, std::string* error);

class ProfileServer final : public RunServer {
 public:
  explicit ProfileServer(const ServeSettings& settings = {});
  ~ProfileServer();  // stop()
  ProfileServer(const ProfileServer&) = delete;
  ProfileServer& operator=(const ProfileServer&) = delete;

  // Listens on `address` (parse_listen_address) and serves the runs added, from its own
  // threads, which take none of the program's signals. False with the reason (a bad address,
  // a port in use).
  bool start(const std::string& address, std::string* error);
  // The same with `run` added.
  bool start(const std::string& address, ServedRun run, std::string* error);
  // Any thread: serves `run` too (at the continuous rate, if on); returns its id for remove_run.
  std::uint64_t add_run(ServedRun run) override { return collection_->add_run(std::move(run)); }
  // Any thread: serves the run no more. When it returns, the server calls nothing of it again
  // (a request under way leaves it out, its set_period included).
  void remove_run(std::uint64_t id) override { collection_->remove_run(id); }
  // "127.0.0.1:6060" as bound (the port chosen for port 0); empty when not serving.
  std::string address() const override;
  bool serving() const;
  // Ends every request (a collection under way answers 503), then stops listening and joins
  // the server's threads. Idempotent. The runs get no rate (they pause) after it returns.
  void stop() override;

 private:
  struct Impl;
  std::shared_ptr<LiveCollection> collection_;
  std::unique_ptr<Impl> impl_;
};

// A run served: `engine`'s run (started with served_settings(), on its thread) gets a live feed
// and a ProfileServer serves it. Both calls on the engine's thread; the engine outlives it.
class ServedEngine {
 public:
  ~ServedEngine() { stop(); }
  // Serves the run on `address` as `settings` say; `about` gives the program, runtime and note
  // (its feed and set_period are filled here). False with the reason; the engine then has no feed.
  bool start(SamplerEngine& engine, const std::string& address, const ServeSettings& settings, ServedRun about,
             std::string* error);
  // Stops the server (requests under way end), then takes the feed back. Idempotent.
  void stop();
  bool serving() const { return server_ && server_->serving(); }
  std::string address() const { return server_ ? server_->address() : std::string(); }

 private:
  SamplerEngine* engine_ = nullptr;
  std::unique_ptr<ProfileServer> server_;
  std::uint64_t run_ = 0;  // its id in server_
};


}  // namespace scriptprof
