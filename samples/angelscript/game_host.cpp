// build/bin/angelscript_game_host: how an engine embeds the profiler next to AngelScript, with
// the C API (scriptprof_angelscript.h). It runs game.as's frames itself: every frame it calls
// the script's update through scriptprof_as_execute (where it called ctx->Execute()) and marks
// the frame's end with scriptprof_frame(). At the end it prints the flat and frames reports and
// writes a speedscope file:
//   build/bin/angelscript_game_host samples/angelscript/game.as [frames] [out.speedscope.json]
#include <angelscript.h>
#include <scriptarray.h>
#include <scriptbuilder.h>
#include <scriptmath.h>
#include <scriptstdstring.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "scriptprof_angelscript.h"

#if defined(AS_USE_NAMESPACE) || defined(AS_DEBIAN_LIB)
using namespace AngelScript;
#endif

namespace {

void message(const asSMessageInfo* m, void*) {
  if (m->type == asMSGTYPE_ERROR) std::fprintf(stderr, "%s:%d:%d: %s\n", m->section, m->row, m->col, m->message);
}
void print(const std::string& s) { std::fputs(s.c_str(), stdout); }
// game.as's own loop is not used here: the host owns the frames.
std::string no_arg(asUINT) { return ""; }
asUINT no_args() { return 0; }
void frame() {}

bool check(scriptprof_status s) {
  if (s != SCRIPTPROF_OK) std::fprintf(stderr, "angelscript_game_host: %s\n", scriptprof_error());
  return s == SCRIPTPROF_OK;
}

void print_report(const scriptprof_profile* prof, const char* style) {
  char* text = nullptr;
  if (check(scriptprof_profile_report(prof, style, &text))) std::fputs(text, stdout);
  scriptprof_string_free(text);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s game.as [frames] [out.speedscope.json]\n", argv[0]);
    return 2;
  }
  const int frames = argc > 2 ? std::atoi(argv[2]) : 300;
  asIScriptEngine* engine = asCreateScriptEngine();
  engine->SetMessageCallback(asFUNCTION(message), nullptr, asCALL_CDECL);
  RegisterStdString(engine);
  RegisterScriptArray(engine, true);
  RegisterScriptMath(engine);
  engine->RegisterGlobalFunction("void print(const string &in)", asFUNCTION(print), asCALL_CDECL);
  engine->RegisterGlobalFunction("string arg(uint)", asFUNCTION(no_arg), asCALL_CDECL);
  engine->RegisterGlobalFunction("uint arg_count()", asFUNCTION(no_args), asCALL_CDECL);
  engine->RegisterGlobalFunction("void frame()", asFUNCTION(frame), asCALL_CDECL);
  CScriptBuilder builder;
  if (builder.StartNewModule(engine, "game") < 0 || builder.AddSectionFromFile(argv[1]) < 0 || builder.BuildModule() < 0) {
    std::fprintf(stderr, "angelscript_game_host: cannot build %s\n", argv[1]);
    return 1;
  }
  asIScriptModule* mod = engine->GetModule("game");
  asIScriptFunction* setup = mod->GetFunctionByDecl("void setup()");
  asIScriptFunction* update = mod->GetFunctionByDecl("void update(float)");
  if (!setup || !update) {
    std::fprintf(stderr, "angelscript_game_host: %s needs void setup() and void update(float)\n", argv[1]);
    return 1;
  }

  scriptprof_options options;
  scriptprof_options_init(&options);
  options.hz = 1000;
  scriptprof_profiler* profiler = nullptr;
  if (!check(scriptprof_create(&options, &profiler))) return 1;
  asIScriptContext* ctx = engine->CreateContext();
  check(scriptprof_as_name_context(profiler, ctx, "game scripts"));
  if (!check(scriptprof_as_start(profiler))) return 1;
  ctx->Prepare(setup);
  int status = scriptprof_as_execute(ctx);
  for (int f = 0; f < frames && status == asEXECUTION_FINISHED; ++f) {
    ctx->Prepare(update);
    ctx->SetArgFloat(0, 1.0f / 60);
    status = scriptprof_as_execute(ctx);  // where the engine called ctx->Execute()
    scriptprof_frame();                   // the frame ends: the frames report
  }
  check(scriptprof_as_stop(profiler));  // before the context and the engine go
  if (status != asEXECUTION_FINISHED) std::fprintf(stderr, "angelscript_game_host: a script failed (%d)\n", status);

  scriptprof_profile* prof = nullptr;
  if (!check(scriptprof_take_profile(profiler, &prof))) return 1;
  print_report(prof, "flat");
  print_report(prof, "frames");
  if (argc > 3 && check(scriptprof_profile_write(prof, "speedscope", argv[3])))
    std::printf("wrote %s\n", argv[3]);
  scriptprof_profile_free(prof);
  scriptprof_destroy(profiler);
  ctx->Release();
  engine->ShutDownAndRelease();
  return status == asEXECUTION_FINISHED ? 0 : 1;
}
