// What an embedding API asks of a profile server, with no HTTP in sight: runs in and out, its
// address, its end. ProfileServer (profile_server.hpp, in scriptprof::serve's library with
// cpp-httplib) is the one there is; the embedding library holds it through this, so a host
// that serves nothing links no HTTP library.
#pragma once
#include <cstdint>
#include <string>

#include "scriptprof/live_collection.hpp"

namespace scriptprof {

class SamplerEngine;
struct RunSettings;

class RunServer {
 public:
  virtual ~RunServer() = default;
  // Any thread: serves `run` too; returns its id for remove_run.
  virtual std::uint64_t add_run(ServedRun run) = 0;
  // Any thread: when it returns, the server calls nothing of the run again.
  virtual void remove_run(std::uint64_t id) = 0;
  // "127.0.0.1:6060" as bound; empty when not serving.
  virtual std::string address() const = 0;
  // Ends every request and stops listening. Idempotent.
  virtual void stop() = 0;
};

// Adds `engine`'s run (started with make_served()'s settings, on its thread) to `server`: the
// engine gets a live feed and the server drives its rate. `about` gives the program, runtime,
// note and process names. Returns the run's id for unserve_engine. The engine's thread.
std::uint64_t serve_engine(RunServer& server, SamplerEngine& engine, ServedRun about);
// Takes the run back from `server` and the feed from `engine` (the engine's thread, before its
// run stops): the server calls nothing of the engine after this.
void unserve_engine(RunServer& server, SamplerEngine& engine, std::uint64_t run);

// `settings` for a served run: sampling from the start with no tick until a request gives a
// rate, and no max_samples (a server runs for days; its profiles are the requests').
void make_served(RunSettings& settings);

}  // namespace scriptprof
