#include "command_serving.hpp"

#include <cstdio>

namespace luaprof {

bool CommandServing::start(scriptprof::SamplerEngine& engine, const Options& o, const std::string& program,
                           const char* runtime, const char* progname, std::string* error) {
  if (o.serve.empty()) return true;
#ifdef SCRIPTPROF_HTTP
  scriptprof::ServedRun about;
  about.program = program;
  about.runtime = runtime;
  scriptprof::ServeSettings settings;
  settings.continuous_hz = o.continuous;
  settings.window_seconds = o.window;
  if (!served_.start(engine, o.serve, settings, std::move(about), error)) return false;
  std::fprintf(stderr, "%s: serving profiles at http://%s/debug/pprof/\n", progname, served_.address().c_str());
  std::fflush(stderr);
  return true;
#else
  (void)engine, (void)program, (void)runtime, (void)progname;
  *error = "this build has no profile server";
  return false;
#endif
}

void CommandServing::stop() {
#ifdef SCRIPTPROF_HTTP
  served_.stop();
#endif
}

}  // namespace luaprof
