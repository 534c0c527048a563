// The C API for AngelScript hosts (scriptprof_angelscript.h with scriptprof.h): a game loop's
// contexts and frames, the same reports and files as any host, and the refusals.
#include <catch2/catch.hpp>

#include <scriptmath.h>

#include <cstdio>
#include <string>

#include "scriptprof/profiler.hpp"
#include "scriptprof_angelscript.h"

#if defined(AS_USE_NAMESPACE) || defined(AS_DEBIAN_LIB)
using namespace AngelScript;
#endif

namespace {

const char* kFrameScript = R"as(
  class Player {
    float x = 0;
    void update(float dt) { for (int i = 0; i < 30000; i++) x += sqrt(float(i % 9)) * dt; }
  }
  Player player;
  void frame_update() { player.update(0.01f); }
)as";

std::string report(const scriptprof_profile* prof, const char* style) {
  char* text = nullptr;
  REQUIRE(scriptprof_profile_report(prof, style, &text) == SCRIPTPROF_OK);
  std::string s = text;
  scriptprof_string_free(text);
  return s;
}

}  // namespace

TEST_CASE("An AngelScript host through the C API: frames, names, reports and files") {
  asIScriptEngine* engine = asCreateScriptEngine();
  RegisterScriptMath(engine);
  asIScriptModule* mod = engine->GetModule("game", asGM_ALWAYS_CREATE);
  mod->AddScriptSection("game.as", kFrameScript);
  REQUIRE(mod->Build() >= 0);
  asIScriptFunction* update = mod->GetFunctionByDecl("void frame_update()");
  asIScriptContext* ctx = engine->CreateContext();

  scriptprof_options o;
  scriptprof_options_init(&o);
  o.hz = 2000;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  REQUIRE(scriptprof_as_name_context(p, ctx, "game loop") == SCRIPTPROF_OK);
  CHECK(scriptprof_as_stop(p) == SCRIPTPROF_INVALID_STATE);  // not started
  REQUIRE(scriptprof_as_start(p) == SCRIPTPROF_OK);
  CHECK(scriptprof_as_start(p) == SCRIPTPROF_INVALID_STATE);  // already
  for (int frame = 0; frame < 60; ++frame) {
    ctx->Prepare(update);
    REQUIRE(scriptprof_as_execute(ctx) == asEXECUTION_FINISHED);
    scriptprof_frame();
  }
  REQUIRE(scriptprof_as_stop(p) == SCRIPTPROF_OK);

  scriptprof_profile* prof = nullptr;
  REQUIRE(scriptprof_take_profile(p, &prof) == SCRIPTPROF_OK);
  CHECK(scriptprof_profile_samples(prof) > 50);
  std::string flat = report(prof, "flat");
  CHECK(flat.find("Player::update(float) (game.as:4)") != std::string::npos);
  std::string frames = report(prof, "frames");
  INFO(frames);
  // Frames are the host thread's (marked between scripts); the context is its own process.
  bool named = false;
  for (const scriptprof::ThreadInfo& t : scriptprof::profile_of(prof).threads) named |= t.name == "game loop";
  CHECK(named);
  CHECK(frames.find("60 frames") != std::string::npos);  // a mark ends a frame: 60 marks, 60 frames
  // A LispWorks tree written and read back gives the same report.
  const char* path = "angelscript_c_api.tree";
  REQUIRE(scriptprof_profile_write(prof, "lispworks", path) == SCRIPTPROF_OK);
  scriptprof_profile* back = nullptr;
  REQUIRE(scriptprof_profile_read(path, nullptr, &back) == SCRIPTPROF_OK);
  CHECK(report(back, "flat").find("Player::update(float)") != std::string::npos);
  std::remove(path);
  scriptprof_profile_free(back);
  scriptprof_profile_free(prof);
  CHECK(scriptprof_destroy(p) == SCRIPTPROF_OK);
  ctx->Release();
  engine->ShutDownAndRelease();
}

TEST_CASE("The C API refuses counted calls for AngelScript, naming the capability") {
  scriptprof_options o;
  scriptprof_options_init(&o);
  o.count_calls = 1;
  scriptprof_profiler* p = nullptr;
  REQUIRE(scriptprof_create(&o, &p) == SCRIPTPROF_OK);
  CHECK(scriptprof_as_start(p) == SCRIPTPROF_INVALID_STATE);
  std::string message = scriptprof_error();
  CHECK(message.find("scriptprof_as_start") != std::string::npos);
  CHECK(message.find("AngelScript 2.35.1 has no call events") != std::string::npos);
  CHECK(scriptprof_destroy(p) == SCRIPTPROF_OK);
}
