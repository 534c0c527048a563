#include "report_output.hpp"

#include <cstdio>

#include "scriptprof/annotated_source.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/profile_io.hpp"

namespace luaprof {

bool write_reports(const Options& o, const char* program, const RunProfiles& profiles, const SourceLines& source_lines) {
  bool ok = true;
  std::string text, error;
  static const char* const titles[] = {"time", "garbage collections (a sample after each)", "space (bytes allocated)"};
  for (const auto& [kind, profile] : profiles) {
    std::string one;
    if (!scriptprof::render_report(*profile, o.style, &one, &error, o.report)) one = error + "\n";
    if (profiles.size() > 1) text += "== " + std::string(titles[static_cast<int>(kind)]) + " ==\n";
    text += one;
    for (const std::string& name : o.annotate)
      for (scriptprof::FunctionId f = 0; f < profile->functions.size(); ++f)
        if (profile->counts(f).cumulative > 0 &&
            (profile->functions.info(f).name == name || profile->functions.label(f) == name))
          text += "\n" + scriptprof::annotated_source(*profile, f, source_lines(*profile, f));
  }
  if (!o.output.empty() && !profiles.empty()) {
    std::string file;
    if (!scriptprof::render_format(*profiles[0].second, o.format, &file, &error) ||
        !scriptprof::write_file_atomically(o.output, file, &error)) {
      std::fprintf(stderr, "%s: %s\n", program, error.c_str());
      ok = false;
    }
  }
  if (o.report_file.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else if (!scriptprof::write_file_atomically(o.report_file, text, &error)) {
    std::fprintf(stderr, "%s: %s\n", program, error.c_str());
    ok = false;
  }
  return ok;
}

}  // namespace luaprof
