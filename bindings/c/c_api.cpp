// The C API over scriptprof::Profiler: status codes and a per-thread message, never an
// exception or an abort across the C boundary.
#include "c_api_internal.hpp"
#include "scriptprof_lua.h"
#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
#include "angelscript_sampler.hpp"
#include "scriptprof_angelscript.h"
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "lua_sampler.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/run_options.hpp"
#include "scriptprof/profiler.hpp"
#include "zone_log.hpp"
#include "zones.hpp"

struct scriptprof_profile {
  scriptprof::Profile profile;
};
struct scriptprof_fiber {
  std::unique_ptr<scriptprof::native::Fiber> fiber;
};

const scriptprof::Profile& scriptprof::profile_of(const scriptprof_profile* handle) { return handle->profile; }

namespace {
thread_local std::string t_error;
}  // namespace

scriptprof_status scriptprof::c_api::failed(scriptprof_status status, std::string message) {
  t_error = std::move(message);
  return status;
}

namespace {

using scriptprof::c_api::failed;
using scriptprof::c_api::guarded;

// A Profiler call's outcome: OK, or `status` with its message ("start: ...") under the C
// name ("scriptprof_start: ...").
scriptprof_status outcome(bool ok, scriptprof_status status, const std::string& error) {
  return ok ? SCRIPTPROF_OK : failed(status, "scriptprof_" + error);
}

// A report as a malloc'ed string the caller frees with scriptprof_string_free.
scriptprof_status report_text(const char* fn, const scriptprof::Profile& profile, const char* style,
                              const scriptprof::ReportOptions& options, char** text) {
  *text = nullptr;
  return guarded(fn, [&] {
    std::string out, error;
    if (!scriptprof::render_report(profile, style, &out, &error, options))
      return failed(SCRIPTPROF_INVALID_ARGUMENT, std::string(fn) + ": " + error);
    char* copy = static_cast<char*>(std::malloc(out.size() + 1));
    if (!copy) return failed(SCRIPTPROF_OUT_OF_MEMORY, std::string(fn) + ": out of memory");
    std::memcpy(copy, out.c_str(), out.size() + 1);
    *text = copy;
    return SCRIPTPROF_OK;
  });
}

}  // namespace

extern "C" {

const char* scriptprof_error(void) { return t_error.c_str(); }

void scriptprof_options_init(scriptprof_options* o) {
  if (!o) return;
  o->hz = 100;
  o->wall_clock = 0;
  o->count_calls = 0;
  o->full_stacks = 0;
  o->max_samples = 100000;
  o->signal = NULL;
}

scriptprof_status scriptprof_create(const scriptprof_options* options, scriptprof_profiler** out) {
  SCRIPTPROF_REQUIRE(out, "scriptprof_create: out is NULL");
  *out = nullptr;
  scriptprof_options o;
  scriptprof_options_init(&o);
  if (options) o = *options;
  // Each field is checked and read by the run-option table the Lua module and luaprof use.
  scriptprof::RunSettings run;
  std::string error;
  const struct { const char* name; scriptprof::OptionValue value; } fields[] = {
      {"hz", scriptprof::OptionValue::of_number(o.hz)},
      {"clock", scriptprof::OptionValue::of_string(o.wall_clock ? "wall" : "cpu")},
      {"count_calls", scriptprof::OptionValue::of_bool(o.count_calls != 0)},
      {"full_stacks", scriptprof::OptionValue::of_bool(o.full_stacks != 0)},
      {"max_samples", scriptprof::OptionValue::of_int(static_cast<std::int64_t>(
                          std::min<std::uint64_t>(o.max_samples, INT64_MAX)))},
  };
  for (const auto& f : fields)
    if (!scriptprof::set_run_option(&run, f.name, f.value, &error))
      return failed(SCRIPTPROF_INVALID_ARGUMENT, std::string("scriptprof_create: ") + f.name + " " + error);
  if (o.signal && !scriptprof::set_run_option(&run, "signal", scriptprof::OptionValue::of_string(o.signal), &error))
    return failed(SCRIPTPROF_INVALID_ARGUMENT, std::string("scriptprof_create: signal ") + error);
  return guarded("scriptprof_create", [&] {
    *out = new scriptprof_profiler(run);
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_set_option(scriptprof_profiler* p, const char* name, const char* value) {
  SCRIPTPROF_REQUIRE(p && name && value, "scriptprof_set_option: profiler, name or value is NULL");
  return guarded("scriptprof_set_option", [&] {
    std::string error;
    if (p->profiler.set_option(name, value, &error)) return SCRIPTPROF_OK;
    return failed(p->profiler.running() ? SCRIPTPROF_INVALID_STATE : SCRIPTPROF_INVALID_ARGUMENT, "scriptprof_" + error);
  });
}

const char* scriptprof_serving_address(scriptprof_profiler* p) {
  if (!p) return "";
  try {
    p->address = p->profiler.serving_address();
  } catch (...) {
    p->address.clear();
  }
  return p->address.c_str();
}

scriptprof_status scriptprof_stop_serving(scriptprof_profiler* p) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_stop_serving: profiler is NULL");
  return guarded("scriptprof_stop_serving", [&] {
    p->profiler.stop_serving();
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_destroy(scriptprof_profiler* p) {
  if (!p) return SCRIPTPROF_OK;
  std::string error;
  if (!p->profiler.can_destroy(&error)) return failed(SCRIPTPROF_INVALID_STATE, "scriptprof_destroy: " + error);
  delete p;
  return SCRIPTPROF_OK;
}

scriptprof_status scriptprof_attach(scriptprof_profiler* p, lua_State* L) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_attach: profiler is NULL");
  SCRIPTPROF_REQUIRE(L, "scriptprof_attach: L is NULL");
  return guarded("scriptprof_attach", [&] {
    std::string error;
    return outcome(p->profiler.attach(L, &error), SCRIPTPROF_OUT_OF_MEMORY, error);
  });
}

scriptprof_status scriptprof_detach(scriptprof_profiler* p, lua_State* L) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_detach: profiler is NULL");
  SCRIPTPROF_REQUIRE(L, "scriptprof_detach: L is NULL");
  return guarded("scriptprof_detach", [&] {
    std::string error;
    return outcome(p->profiler.detach(L, &error), SCRIPTPROF_INVALID_STATE, error);
  });
}

scriptprof_status scriptprof_start(scriptprof_profiler* p, lua_State* L) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_start: profiler is NULL");
  return guarded("scriptprof_start", [&] {
    std::string error;
    scriptprof::Failure kind;
    bool ok = p->profiler.start(L, &error, &kind);
    return outcome(ok, kind == scriptprof::Failure::System ? SCRIPTPROF_SYSTEM_ERROR : SCRIPTPROF_INVALID_STATE, error);
  });
}

scriptprof_status scriptprof_stop(scriptprof_profiler* p, lua_State* L) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_stop: profiler is NULL");
  return guarded("scriptprof_stop", [&] {
    std::string error;
    return outcome(p->profiler.stop(L, &error), SCRIPTPROF_INVALID_STATE, error);
  });
}

scriptprof_status scriptprof_start_thread(scriptprof_profiler* p) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_start_thread: profiler is NULL");
  return scriptprof_start(p, nullptr);
}

scriptprof_status scriptprof_stop_thread(scriptprof_profiler* p) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_stop_thread: profiler is NULL");
  return scriptprof_stop(p, nullptr);
}

void scriptprof_enter_coroutine(lua_State* from, lua_State* co) {
  if (!from || !co) return;
  if (auto* s = scriptprof::lua::LuaSampler::of(co)) s->enter_coroutine(from, co);
}

void scriptprof_leave_coroutine(lua_State* co, lua_State* from) {
  if (!from || !co) return;
  if (auto* s = scriptprof::lua::LuaSampler::of(co)) s->leave_coroutine(co, from);
}

uint32_t scriptprof_zone_id(const char* name) {
  try {
    return scriptprof::native::intern_zone(name ? name : "(null)");
  } catch (...) {
    return scriptprof::native::kNoZone;  // out of memory: begin/end ignore it
  }
}

void scriptprof_zone_begin(uint32_t zone) {
  if (zone != scriptprof::native::kNoZone) scriptprof::native::zone_begin(zone);
}

void scriptprof_zone_end(uint32_t zone) {
  if (zone != scriptprof::native::kNoZone) scriptprof::native::zone_end(zone);
}

scriptprof_status scriptprof_fiber_create_native(const char* name, scriptprof_fiber** out) {
  return scriptprof_fiber_create(name, nullptr, out);
}

scriptprof_status scriptprof_fiber_create(const char* name, lua_State* L, scriptprof_fiber** out) {
  SCRIPTPROF_REQUIRE(out, "scriptprof_fiber_create: out is NULL");
  *out = nullptr;
  return guarded("scriptprof_fiber_create", [&] {
    auto f = std::make_unique<scriptprof_fiber>();
    f->fiber = scriptprof::native::new_fiber(name ? name : "", L);
    *out = f.release();
    return SCRIPTPROF_OK;
  });
}

void scriptprof_fiber_destroy(scriptprof_fiber* f) { delete f; }

void scriptprof_fiber_switch(scriptprof_fiber* to) {
  scriptprof::native::switch_fiber(to ? to->fiber.get() : nullptr);
}

void scriptprof_name_thread(const char* name) {
  try {
    scriptprof::native::name_thread(name ? name : "");
  } catch (...) {
  }
}

void scriptprof_frame(void) { scriptprof::native::mark_frame(); }

void scriptprof_zone_log_start(void) { scriptprof::native::start_zone_log(); }

scriptprof_status scriptprof_zone_log_write(const char* path) {
  SCRIPTPROF_REQUIRE(path, "scriptprof_zone_log_write: path is NULL");
  return guarded("scriptprof_zone_log_write", [&] {
    std::string text = scriptprof::native::zone_log_lms_csv(scriptprof::native::zone_log_events(),
                                                            scriptprof::native::process_names());
    std::string error;
    if (!scriptprof::write_file_atomically(path, text, &error)) return failed(SCRIPTPROF_IO_ERROR, error);
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_take_profile_of(scriptprof_profiler* p, const char* kind, scriptprof_profile** out) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_take_profile: profiler is NULL");
  SCRIPTPROF_REQUIRE(out, "scriptprof_take_profile: out is NULL");
  *out = nullptr;
  const std::string k = kind ? kind : "";
  SCRIPTPROF_REQUIRE(k == "time" || k == "gc" || k == "space",
                     "scriptprof_take_profile_of: kind must be \"time\", \"gc\" or \"space\", got \"" + k + "\"");
  const auto sample_kind = k == "time" ? scriptprof::SampleKind::Time : k == "gc" ? scriptprof::SampleKind::Gc
                                                                                 : scriptprof::SampleKind::Space;
  return guarded("scriptprof_take_profile", [&] {
    auto prof = std::make_unique<scriptprof_profile>();
    std::string error;
    if (!p->profiler.take_profile(&prof->profile, &error, sample_kind)) return outcome(false, SCRIPTPROF_INVALID_STATE, error);
    *out = prof.release();
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_take_profile(scriptprof_profiler* p, scriptprof_profile** out) {
  return scriptprof_take_profile_of(p, "time", out);
}

scriptprof_status scriptprof_reset(scriptprof_profiler* p) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_reset: profiler is NULL");
  return guarded("scriptprof_reset", [&] {
    std::string error;
    return outcome(p->profiler.reset(&error), SCRIPTPROF_INVALID_STATE, error);
  });
}

scriptprof_status scriptprof_profile_read(const char* path, const char* format, scriptprof_profile** out) {
  SCRIPTPROF_REQUIRE(path, "scriptprof_profile_read: path is NULL");
  SCRIPTPROF_REQUIRE(out, "scriptprof_profile_read: out is NULL");
  *out = nullptr;
  return guarded("scriptprof_profile_read", [&] {
    auto prof = std::make_unique<scriptprof_profile>();
    std::string error;
    if (!scriptprof::read_profile_file(path, format ? format : "", &prof->profile, &error))
      return failed(SCRIPTPROF_IO_ERROR, error);
    *out = prof.release();
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_profile_write(const scriptprof_profile* prof, const char* format, const char* path) {
  SCRIPTPROF_REQUIRE(prof, "scriptprof_profile_write: profile is NULL");
  SCRIPTPROF_REQUIRE(format, "scriptprof_profile_write: format is NULL");
  SCRIPTPROF_REQUIRE(path, "scriptprof_profile_write: path is NULL");
  return guarded("scriptprof_profile_write", [&] {
    std::string text, error;
    if (!scriptprof::render_format(prof->profile, format, &text, &error))
      return failed(SCRIPTPROF_INVALID_ARGUMENT, "scriptprof_profile_write: " + error);
    if (!scriptprof::write_file_atomically(path, text, &error)) return failed(SCRIPTPROF_IO_ERROR, error);
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_profile_report(const scriptprof_profile* prof, const char* style, char** text) {
  SCRIPTPROF_REQUIRE(prof, "scriptprof_profile_report: profile is NULL");
  SCRIPTPROF_REQUIRE(style, "scriptprof_profile_report: style is NULL");
  SCRIPTPROF_REQUIRE(text, "scriptprof_profile_report: text is NULL");
  return report_text("scriptprof_profile_report", prof->profile, style, {}, text);
}

scriptprof_status scriptprof_profile_frames(const scriptprof_profile* prof, size_t slowest, char** text) {
  SCRIPTPROF_REQUIRE(prof, "scriptprof_profile_frames: profile is NULL");
  SCRIPTPROF_REQUIRE(text, "scriptprof_profile_frames: text is NULL");
  scriptprof::ReportOptions options;
  options.slowest_frames = slowest;
  return report_text("scriptprof_profile_frames", prof->profile, "frames", options, text);
}

uint64_t scriptprof_profile_samples(const scriptprof_profile* prof) { return prof ? prof->profile.sample_weight() : 0; }

size_t scriptprof_profile_processes(const scriptprof_profile* prof) { return prof ? prof->profile.tree.roots().size() : 0; }

void scriptprof_profile_free(scriptprof_profile* prof) { delete prof; }

void scriptprof_string_free(char* text) { std::free(text); }

}  // extern "C"

#ifdef SCRIPTPROF_WITH_ANGELSCRIPT
// ---- AngelScript (scriptprof_angelscript.h) ----------------------------------------------

scriptprof_status scriptprof_as_start(scriptprof_profiler* p) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_as_start: profiler is NULL");
  return guarded("scriptprof_as_start", [&] {
    std::string error;
    scriptprof::Failure kind;
    bool ok = p->profiler.start_angelscript(&error, &kind);
    return outcome(ok, kind == scriptprof::Failure::System ? SCRIPTPROF_SYSTEM_ERROR : SCRIPTPROF_INVALID_STATE,
                   "as_" + error);
  });
}

scriptprof_status scriptprof_as_stop(scriptprof_profiler* p) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_as_stop: profiler is NULL");
  return guarded("scriptprof_as_stop", [&] {
    std::string error;
    return outcome(p->profiler.stop_angelscript(&error), SCRIPTPROF_INVALID_STATE, "as_" + error);
  });
}

int scriptprof_as_execute(AS_NAMESPACE_QUALIFIER asIScriptContext* ctx) { return scriptprof::angelscript::execute(ctx); }

void scriptprof_as_suspend(AS_NAMESPACE_QUALIFIER asIScriptContext* ctx) { scriptprof::angelscript::suspend(ctx); }

scriptprof_status scriptprof_as_name_context(scriptprof_profiler* p, AS_NAMESPACE_QUALIFIER asIScriptContext* ctx,
                                             const char* name) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_as_name_context: profiler is NULL");
  SCRIPTPROF_REQUIRE(ctx, "scriptprof_as_name_context: context is NULL");
  SCRIPTPROF_REQUIRE(name, "scriptprof_as_name_context: name is NULL");
  return guarded("scriptprof_as_name_context", [&] {
    p->profiler.angelscript_sampler()->name_context(ctx, name);
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_as_started_by(scriptprof_profiler* p, AS_NAMESPACE_QUALIFIER asIScriptContext* child,
                                           AS_NAMESPACE_QUALIFIER asIScriptContext* parent) {
  SCRIPTPROF_REQUIRE(p, "scriptprof_as_started_by: profiler is NULL");
  SCRIPTPROF_REQUIRE(child, "scriptprof_as_started_by: child context is NULL");
  return guarded("scriptprof_as_started_by", [&] {
    p->profiler.angelscript_sampler()->started_by(child, parent);
    return SCRIPTPROF_OK;
  });
}

scriptprof_status scriptprof_as_install_memory_functions(void) {
  if (scriptprof::angelscript::install_memory_functions()) return SCRIPTPROF_OK;
  return failed(SCRIPTPROF_SYSTEM_ERROR, "scriptprof_as_install_memory_functions: AngelScript refused them");
}
#endif
