// The end of a luaprof or luajitprof run: the reports the options ask for, one per profile
// (titled when there are several), annotated sources, the -o file and the report file.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "luaprof_options.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace luaprof {

using RunProfiles = std::vector<std::pair<scriptprof::SampleKind, std::shared_ptr<scriptprof::Profile>>>;
// The source lines of a function, for --annotate (empty when they cannot be read).
using SourceLines = std::function<std::vector<std::string>(const scriptprof::Profile&, scriptprof::FunctionId)>;

// The profiles a started run fills (time, gc, space: those its settings ask for), each named
// `name` (the script) for the reports.
RunProfiles run_profiles(scriptprof::SamplerEngine& engine, const std::string& name);

// Prints (or writes to --report) the reports and writes -o. A file that cannot be written is
// a message naming it on standard error and a false return; nothing half-written is left.
bool write_reports(const Options& o, const char* program, const RunProfiles& profiles, const SourceLines& source_lines);

}  // namespace luaprof
