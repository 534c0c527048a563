// build/bin/asprof: builds an AngelScript file, runs its `void main()` under the AngelScript
// adapter and prints the report. The script has AngelScript's string, array and math add-ons,
// and print(), arg(), arg_count() and frame() (a game frame's boundary, for the frames report).
#include <angelscript.h>
#include <scriptarray.h>
#include <scriptbuilder.h>
#include <scriptmath.h>
#include <scriptstdstring.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "angelscript_sampler.hpp"
#include "command_serving.hpp"
#include "exit_status.hpp"
#include "luaprof_options.hpp"
#include "report_output.hpp"

using namespace scriptprof::angelscript;  // and AngelScript's own namespace, where it has one
namespace as = scriptprof::angelscript;

namespace {

std::vector<std::string> g_args;  // the script's arguments, after its name
as::AngelScriptSampler* g_sampler = nullptr;

void message_callback(const asSMessageInfo* msg, void*) {
  const char* kind = msg->type == asMSGTYPE_ERROR ? "error" : msg->type == asMSGTYPE_WARNING ? "warning" : "info";
  std::fprintf(stderr, "%s:%d:%d: %s: %s\n", msg->section, msg->row, msg->col, kind, msg->message);
}

void script_print(const std::string& text) { std::fputs(text.c_str(), stdout); }
std::string script_arg(asUINT i) { return i < g_args.size() ? g_args[i] : std::string(); }
asUINT script_arg_count() { return static_cast<asUINT>(g_args.size()); }
void script_frame() {
  if (g_sampler) g_sampler->mark_frame();
}

bool register_host(asIScriptEngine* engine) {
  RegisterStdString(engine);
  RegisterScriptArray(engine, true);
  RegisterScriptMath(engine);
  return engine->RegisterGlobalFunction("void print(const string &in)", asFUNCTION(script_print), asCALL_CDECL) >= 0 &&
         engine->RegisterGlobalFunction("string arg(uint)", asFUNCTION(script_arg), asCALL_CDECL) >= 0 &&
         engine->RegisterGlobalFunction("uint arg_count()", asFUNCTION(script_arg_count), asCALL_CDECL) >= 0 &&
         engine->RegisterGlobalFunction("void frame()", asFUNCTION(script_frame), asCALL_CDECL) >= 0;
}

std::vector<std::string> file_lines(const scriptprof::Profile& p, scriptprof::FunctionId f) {
  std::vector<std::string> lines;
  std::ifstream in(p.functions.info(f).file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "script.as:12: Null pointer access (in Player::update(float))".
void report_exception(asIScriptContext* ctx) {
  const char* section = nullptr;
  int line = ctx->GetExceptionLineNumber(nullptr, &section);
  asIScriptFunction* f = ctx->GetExceptionFunction();
  std::fprintf(stderr, "asprof: %s:%d: %s (in %s)\n", section ? section : "?", line, ctx->GetExceptionString(),
               f ? f->GetDeclaration(true, true) : "?");
}

}  // namespace

int main(int argc, char** argv) {
  luaprof::Frontend fe;
  fe.program = "asprof";
  fe.interpreter = "AngelScript's asrun";
  fe.version = "AngelScript " ANGELSCRIPT_VERSION_STRING;
  fe.lua_options = false;
  fe.script = "script.as";
  // What the AngelScript adapter cannot do (its capabilities): not offered, refused by name.
  fe.unsupported = {{"count_calls", "AngelScript has no call events: calls cannot be counted"},
                    {"gc", "AngelScript reports no GC cycles: no gc samples"},
                    {"interpret_closures", "AngelScript has no closures"},
                    {"signal", "asprof's ticks come from a timer thread, not a signal"}};
  luaprof::Options o = luaprof::parse_options(argc, argv, fe);
  const char* script = argv[o.script];
  for (int i = o.script + 1; i < argc; ++i) g_args.emplace_back(argv[i]);

  // Before the engine: the profiler's memory functions see every allocation (--alloc).
  if (!as::install_memory_functions()) {
    std::fprintf(stderr, "asprof: AngelScript refused the profiler's memory functions\n");
    return cli::kToolFailed;
  }
  asIScriptEngine* engine = asCreateScriptEngine();
  if (!engine) {
    std::fprintf(stderr, "asprof: AngelScript %s could not create an engine\n", ANGELSCRIPT_VERSION_STRING);
    return cli::kToolFailed;
  }
  engine->SetMessageCallback(asFUNCTION(message_callback), nullptr, asCALL_CDECL);
  int status = cli::kOk;
  CScriptBuilder builder;
  if (!register_host(engine) || builder.StartNewModule(engine, "script") < 0 ||
      builder.AddSectionFromFile(script) < 0 || builder.BuildModule() < 0) {
    std::fprintf(stderr, "asprof: %s: cannot build the script (see the messages above)\n", script);
    engine->ShutDownAndRelease();
    return cli::kFailed;
  }
  asIScriptFunction* main_fn = engine->GetModule("script")->GetFunctionByDecl("void main()");
  if (!main_fn) {
    std::fprintf(stderr, "asprof: %s has no 'void main()' to run\n", script);
    engine->ShutDownAndRelease();
    return cli::kFailed;
  }

  luaprof::RunProfiles profiles;
  {
    as::AngelScriptSampler sampler;
    g_sampler = &sampler;
    std::string error;
    if (!sampler.start(o.run, &error)) {
      std::fprintf(stderr, "asprof: cannot start the profiler: %s\n", error.c_str());
      engine->ShutDownAndRelease();
      return cli::kToolFailed;
    }
    luaprof::CommandServing serving;  // --serve: stopped before the sampler
    if (!serving.start(sampler.engine(), o, script, "AngelScript " ANGELSCRIPT_VERSION_STRING, "asprof", &error)) {
      std::fprintf(stderr, "asprof: cannot serve profiles: %s\n", error.c_str());
      sampler.stop();
      engine->ShutDownAndRelease();
      return cli::kToolFailed;
    }
    using scriptprof::SampleKind;
    for (SampleKind k : {SampleKind::Time, SampleKind::Space})
      if ((k == SampleKind::Time && o.run.sample_time) || (k == SampleKind::Space && o.run.alloc_bytes)) {
        profiles.emplace_back(k, sampler.shared_profile(k));
        profiles.back().second->name = script;
      }
    asIScriptContext* ctx = engine->CreateContext();
    sampler.name_context(ctx, "main");
    ctx->Prepare(main_fn);
    int r = as::execute(ctx);
    if (r == asEXECUTION_EXCEPTION) {
      report_exception(ctx);
      status = cli::kFailed;
    } else if (r != asEXECUTION_FINISHED) {
      std::fprintf(stderr, "asprof: %s: main() did not finish (status %d)\n", script, r);
      status = cli::kFailed;
    }
    std::fflush(stdout);
    serving.stop();
    sampler.stop();  // before the context and engine go: it holds the functions it met
    g_sampler = nullptr;
    ctx->Release();
  }
  if (o.serve.empty() && !luaprof::write_reports(o, "asprof", profiles, file_lines)) status = cli::kToolFailed;
  engine->ShutDownAndRelease();
  return status;
}
