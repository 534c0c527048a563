#include "http_transport_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace scriptprof {

namespace {

constexpr const char* kLibrary = "libscriptprof_httplib.so";

// Where to look, in order: `named` (SCRIPTPROF_HTTP_LIBRARY) alone when set, else the folders
// around this object, then the installation's folder (set by CMake).
std::vector<std::string> candidates(const char* named) {
  if (named) return {named};
  std::vector<std::string> files;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&open_http_transport), &info) && info.dli_fname && *info.dli_fname) {
    std::string dir = info.dli_fname;
    dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    if (dir.empty()) dir = ".";
    const std::string here = dir;
    for (int up = 0; up < 4; ++up) {  // build/lib/lua/5.3/profiler.so: build/lib is two up
      files.push_back(dir + "/" + kLibrary);
      files.push_back(dir + "/lib/" + kLibrary);
      dir += "/..";
    }
#ifdef SCRIPTPROF_HTTP_FROM_BIN
    files.push_back(here + "/" + SCRIPTPROF_HTTP_FROM_BIN + "/" + kLibrary);  // a tool installed in bin/
#endif
  }
#ifdef SCRIPTPROF_HTTP_INSTALL_DIR
  files.push_back(std::string(SCRIPTPROF_HTTP_INSTALL_DIR) + "/" + kLibrary);
#endif
  return files;
}

// The factory of the first library that opens and has it; null with what was tried.
HttpTransportFactory load(std::string* error) {
  std::string tried;
  const char* named = std::getenv("SCRIPTPROF_HTTP_LIBRARY");
  if (named && !*named) named = nullptr;
  for (const std::string& file : candidates(named)) {
    if (access(file.c_str(), F_OK) != 0) {
      if (named) tried += "; SCRIPTPROF_HTTP_LIBRARY names " + file + ", which does not exist";
      continue;
    }
    // RTLD_LOCAL: its cpp-httplib, libssl and the rest stay out of the program's symbol lookup.
    void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* why = dlerror();
      tried += "; " + (why ? std::string(why) : file);
      continue;
    }
    if (void* factory = dlsym(library, kHttpTransportSymbol)) return reinterpret_cast<HttpTransportFactory>(factory);
    tried += "; " + file + " has no " + kHttpTransportSymbol;
    dlclose(library);
  }
  *error = std::string("the profile server's HTTP library (") + kLibrary + ") " +
           (tried.empty() ? "was not found beside the profiler or where it is installed "
                            "(SCRIPTPROF_HTTP_LIBRARY can name it)"
                          : "could not be opened" + tried);
  return nullptr;
}

}  // namespace

std::unique_ptr<HttpTransport> open_http_transport(const HttpHandler& handler, std::string* error) {
  static std::mutex mutex;
  static HttpTransportFactory factory = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!factory) factory = load(error);  // tried again by a later serve when it failed
  if (!factory) return nullptr;
  std::unique_ptr<HttpTransport> transport(factory(&handler));
  if (!transport) *error = "the profile server could not be made (out of memory)";
  return transport;
}

}  // namespace scriptprof
