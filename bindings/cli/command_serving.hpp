// --serve ADDRESS for the command lines (luaprof, luajitprof, and profiler.luaprof): the run is
// served while the script runs, and the address is said on standard error.
#pragma once
#include <string>

#include "luaprof_options.hpp"
#include "scriptprof/sampler_engine.hpp"
#ifdef SCRIPTPROF_HTTP
#include "scriptprof/profile_server.hpp"
#endif

namespace luaprof {

class CommandServing {
 public:
  // With o.serve: serves `engine`'s run (started with o.run, which --serve made a served run's)
  // at that address as `program` on `runtime`, and prints "PROGNAME: serving profiles at
  // http://ADDRESS/debug/pprof/". False with the reason. Without o.serve: nothing, true.
  bool start(scriptprof::SamplerEngine& engine, const Options& o, const std::string& program, const char* runtime,
             const char* progname, std::string* error);
  // Before the run stops, or its state closes. Idempotent.
  void stop();

 private:
#ifdef SCRIPTPROF_HTTP
  scriptprof::ServedEngine served_;
#endif
};

}  // namespace luaprof
