// The profile server: Go's net/http/pprof endpoints inside the host, so that `go tool pprof
// http://127.0.0.1:6060/debug/pprof/profile?seconds=30` profiles a program that is already
// running. It serves runs (each a SamplerEngine started with ticks_paused and a live feed: a
// Lua state, a thread of a C host) from its own threads: a request sets every run's rate for
// its seconds and builds one profile from their feeds, a process per thread and coroutine as
// the runs number them; the host's threads pay only the sampling a request asked for.
//
//   /debug/pprof/                          index
//   /debug/pprof/profile?seconds=N&hz=H    N seconds (default 30) of the run's clock at H Hz,
//                                          gzipped pprof; one at a time, as Go's
// Bad parameters get 400 with the reason. The HTTP work is cpp-httplib's (Debian's).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scriptprof/live_feed.hpp"
#include "scriptprof/sampling_timer.hpp"

namespace scriptprof {

// What the server serves: one run, and how to drive it from another thread.
struct ServedRun {
  std::string program;              // the script or host, for the index and the profiles' name
  std::string runtime;              // "Lua 5.4", for the index
  std::string note;                 // a line the index adds (LuaJIT: one VM per process)
  TimerClock clock = TimerClock::Cpu;
  std::uint64_t default_period_ns = 10'000'000;  // a request without hz: 100 Hz, as Go's
  std::shared_ptr<LiveFeed> feed;
  std::function<void(std::uint64_t period_ns)> set_period;  // any thread; 0 pauses the ticks
  // Names of processes the run learnt outside its feed (a C host's threads and fibers), asked
  // when a profile is built (any thread). Optional.
  std::function<std::vector<std::pair<std::uint32_t, std::string>>()> process_names;
};

// "127.0.0.1:6060" from what a user typed: ":6060" and "6060" are loopback (only an address
// given in full listens beyond this machine), "[::1]:6060" an IPv6 one; port 0 asks for any
// free port. False with the reason for anything else.
bool parse_listen_address(const std::string& text, std::string* host, int* port, std::string* error);

class ProfileServer {
 public:
  ProfileServer();
  ~ProfileServer();  // stop()
  ProfileServer(const ProfileServer&) = delete;
  ProfileServer& operator=(const ProfileServer&) = delete;

  // Listens on `address` (parse_listen_address) and serves the runs added, from its own
  // threads, which take none of the program's signals. False with the reason (a bad address,
  // a port in use).
  bool start(const std::string& address, std::string* error);
  // The same with `run` added.
  bool start(const std::string& address, ServedRun run, std::string* error);
  // Any thread: serves `run` too, from the next request on; returns its id for remove_run.
  std::uint64_t add_run(ServedRun run);
  // Any thread: serves the run no more. When it returns, the server calls nothing of it again
  // (a request under way leaves it out, its set_period included).
  void remove_run(std::uint64_t id);
  // "127.0.0.1:6060" as bound (the port chosen for port 0); empty when not serving.
  std::string address() const;
  bool serving() const;
  // Ends every request (a collection under way answers 503), then stops listening and joins
  // the server's threads. Idempotent. The run gets no rate from the server after it returns.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace scriptprof

namespace scriptprof {

class SamplerEngine;

// Adds `engine`'s run (started with make_served()'s settings, on its thread) to `server`: the
// engine gets a live feed and the server drives its rate. `about` gives the program, runtime,
// note and process names. Returns the run's id for unserve_engine. The engine's thread.
std::uint64_t serve_engine(ProfileServer& server, SamplerEngine& engine, ServedRun about);
// Takes the run back from `server` and the feed from `engine` (the engine's thread, before its
// run stops): the server calls nothing of the engine after this.
void unserve_engine(ProfileServer& server, SamplerEngine& engine, std::uint64_t run);

// A run served: `engine`'s run (started with served_settings(), on its thread) gets a live feed
// and a ProfileServer serves it. Both calls on the engine's thread; the engine outlives it.
class ServedEngine {
 public:
  ~ServedEngine() { stop(); }
  // Serves the run on `address`; `about` gives the program, runtime and note (its feed and
  // set_period are filled here). False with the reason; the engine then has no feed.
  bool start(SamplerEngine& engine, const std::string& address, ServedRun about, std::string* error);
  // Stops the server (requests under way end), then takes the feed back. Idempotent.
  void stop();
  bool serving() const { return server_.serving(); }
  std::string address() const { return server_.address(); }

 private:
  SamplerEngine* engine_ = nullptr;
  ProfileServer server_;
  std::uint64_t run_ = 0;  // its id in server_
};

// `settings` for a served run: sampling from the start with no tick until a request gives a
// rate, and no max_samples (a server runs for days; its profiles are the requests').
struct RunSettings;
void make_served(RunSettings& settings);

}  // namespace scriptprof
