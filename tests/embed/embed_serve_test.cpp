// scriptprof_serve from a C host: two threads with a state each, asked over HTTP while they run
// (also under ThreadSanitizer: the request's rate, the feed and the server's threads against
// the sampling threads). The answers are gzipped pprof; the test looks for the functions and
// the thread labels in the decompressed bytes.
#include <httplib.h>

#include "../live/gunzip.hpp"
#include "../live/host_port.hpp"

#include <atomic>
#include <string>
#include <thread>

#include "embed_helpers.hpp"

using namespace embed_test;
using live_test::gunzip;
using live_test::host_port;

TEST_CASE("A served host answers go tool pprof's request with every thread's samples, labelled") {
  scriptprof_profiler* p = new_profiler(1000);
  REQUIRE(scriptprof_serve(p, "127.0.0.1:0") == SCRIPTPROF_OK);
  const std::string address = scriptprof_serving_address(p);
  REQUIRE(address.rfind("127.0.0.1:", 0) == 0);
  // Refused: a second serve, and (on another profiler) a bad address or the port taken.
  CHECK(scriptprof_serve(p, "127.0.0.1:0") == SCRIPTPROF_INVALID_ARGUMENT);
  scriptprof_profiler* other = new_profiler(100);
  CHECK(scriptprof_serve(other, "127.0.0.1:http") == SCRIPTPROF_INVALID_ARGUMENT);
  CHECK(scriptprof_serve(other, address.c_str()) == SCRIPTPROF_SYSTEM_ERROR);
  CHECK(std::string(scriptprof_error()).find("in use") != std::string::npos);
  REQUIRE(scriptprof_destroy(other) == SCRIPTPROF_OK);

  // The workers use no Catch2 macro (its assertions are not thread-safe): they count failures.
  std::atomic<int> started{0}, failures{0};
  std::atomic<bool> quit{false};
  auto worker = [&](const char* name, const char* fn) {
    scriptprof_name_thread(name);
    lua_State* L = luaL_newstate();
    luaL_openlibs(L);
    if (luaL_dostring(L, kScript) != LUA_OK || scriptprof_attach(p, L) != SCRIPTPROF_OK ||
        scriptprof_start(p, L) != SCRIPTPROF_OK)
      ++failures;
    ++started;
    while (!quit) {
      lua_getglobal(L, fn);
      lua_pushnumber(L, 0.02);
      if (lua_pcall(L, 1, 0, 0) != LUA_OK) ++failures;
    }
    if (scriptprof_stop(p, L) != SCRIPTPROF_OK) ++failures;
    lua_close(L);
  };
  std::thread a(worker, "thinker", "think"), b(worker, "planner", "plan");
  while (started < 2) std::this_thread::yield();
  // A second serve while serving is refused.
  CHECK(scriptprof_serve(p, "127.0.0.1:0") == SCRIPTPROF_INVALID_ARGUMENT);

  const auto [host, port] = host_port(address);
  httplib::Client client(host, port);
  client.set_read_timeout(30, 0);
  auto res = client.Get("/debug/pprof/profile?seconds=1&hz=500");
  REQUIRE(res);
  CHECK(res->status == 200);
  const std::string pb = gunzip(res->body);
  for (const char* text : {"think (", "plan (", "thread", "thinker", "planner"}) {
    INFO(text);
    CHECK(pb.find(text) != std::string::npos);
  }
  quit = true;
  a.join();
  b.join();
  CHECK(failures == 0);
  // What the sessions collected while served is theirs too: only the request's seconds.
  scriptprof_profile* prof = take_checked(p);
  CHECK(scriptprof_profile_samples(prof) > 0);
  scriptprof_profile_free(prof);
  REQUIRE(scriptprof_stop_serving(p) == SCRIPTPROF_OK);
  CHECK(std::string(scriptprof_serving_address(p)).empty());
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
}

// The heap option with scriptprof_serve: the Lua states' in-use heap by allocation site, and a
// native thread's session beside them starts (the option is the Lua states': it has none).
TEST_CASE("A served host with the heap option answers /debug/pprof/heap with its states' sites") {
  scriptprof_profiler* p = new_profiler(100);
  std::atomic<int> failures_native{0};
  REQUIRE(scriptprof_set_option(p, "heap", "4096") == SCRIPTPROF_OK);
  REQUIRE(scriptprof_serve(p, "127.0.0.1:0") == SCRIPTPROF_OK);
  const std::string address = scriptprof_serving_address(p);
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  attach_and_start(p, L);
  REQUIRE(luaL_dostring(L, "kept = {} function keeper() for i = 1, 1000 do kept[i] = string.rep('k', 1000) .. i end end "
                           "keeper() collectgarbage()") == LUA_OK);
  const auto [host, port] = host_port(address);
  httplib::Client client(host, port);
  auto res = client.Get("/debug/pprof/heap");
  REQUIRE(res);
  CHECK(res->status == 200);
  const std::string pb = gunzip(res->body);
  CHECK(pb.find("keeper (") != std::string::npos);
  CHECK(pb.find("inuse_space") != std::string::npos);
  // A native thread's session starts beside it: the option is the Lua states' alone.
  std::thread native([&] {
    if (scriptprof_start_thread(p) == SCRIPTPROF_OK) scriptprof_stop_thread(p);
    else failures_native = 1;
  });
  native.join();
  CHECK(failures_native == 0);
  REQUIRE(scriptprof_stop(p, L) == SCRIPTPROF_OK);
  lua_close(L);
  REQUIRE(scriptprof_destroy(p) == SCRIPTPROF_OK);
}
