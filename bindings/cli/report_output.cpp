#include "report_output.hpp"

#include <algorithm>
#include <cstdio>

#include "scriptprof/annotated_source.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/profile_io.hpp"

namespace luaprof {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The sampled function names nearest to `name` (a typo, a missing class prefix), best first.
std::string close_matches(const RunProfiles& profiles, const std::string& name) {
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const auto& [kind, profile] : profiles)
    for (scriptprof::FunctionId f = 0; f < profile->functions.size(); ++f) {
      if (profile->counts(f).cumulative == 0) continue;
      const std::string& candidate = profile->functions.info(f).name;
      const std::size_t d = edit_distance(name, candidate);
      if (d <= std::max<std::size_t>(2, name.size() / 3) || candidate.find(name) != std::string::npos)
        near.emplace_back(d, candidate);
    }
  std::sort(near.begin(), near.end());
  near.erase(std::unique(near.begin(), near.end()), near.end());
  std::string out;
  for (std::size_t i = 0; i < near.size() && i < 5; ++i) out += (i ? ", " : "") + near[i].second;
  return out;
}

}  // namespace

RunProfiles run_profiles(scriptprof::SamplerEngine& engine, const std::string& name) {
  using scriptprof::SampleKind;
  RunProfiles profiles;
  for (SampleKind k : {SampleKind::Time, SampleKind::Gc, SampleKind::Space})
    if (engine.collects(k)) {
      profiles.emplace_back(k, engine.shared_profile(k));
      profiles.back().second->name = name;
    }
  return profiles;
}

bool write_reports(const Options& o, const char* program, const RunProfiles& profiles, const SourceLines& source_lines) {
  bool ok = true;
  std::string text, error;
  static const char* const titles[] = {"time", "garbage collections (a sample after each)", "space (bytes allocated)"};
  std::vector<bool> annotated(o.annotate.size(), false);
  for (const auto& [kind, profile] : profiles) {
    std::string one;
    if (!scriptprof::render_report(*profile, o.style, &one, &error, o.report)) one = error + "\n";
    if (profiles.size() > 1) text += "== " + std::string(titles[static_cast<int>(kind)]) + " ==\n";
    text += one;
    for (std::size_t n = 0; n < o.annotate.size(); ++n)
      for (scriptprof::FunctionId f = 0; f < profile->functions.size(); ++f)
        if (profile->counts(f).cumulative > 0 &&
            (profile->functions.info(f).name == o.annotate[n] || profile->functions.label(f) == o.annotate[n])) {
          text += "\n" + scriptprof::annotated_source(*profile, f, source_lines(*profile, f));
          annotated[n] = true;
        }
  }
  // A name that matched nothing is an error, with the names it may have meant.
  for (std::size_t n = 0; n < o.annotate.size(); ++n) {
    if (annotated[n]) continue;
    const std::string near = close_matches(profiles, o.annotate[n]);
    std::fprintf(stderr, "%s: --annotate %s: no sampled function has that name%s%s\n", program, o.annotate[n].c_str(),
                 near.empty() ? "" : "; close: ", near.c_str());
    ok = false;
  }
  // -o: the first profile at the path; the others of the run beside it, tagged by kind
  // ("run.gc.folded", "run.space.folded"), and the report says where each went.
  static const char* const tags[] = {"time", "gc", "space"};
  for (std::size_t i = 0; !o.output.empty() && i < profiles.size(); ++i) {
    const auto& [kind, profile] = profiles[i];
    std::string path = i == 0 ? o.output : scriptprof::tagged_path(o.output, tags[static_cast<int>(kind)]);
    std::string file;
    if (!scriptprof::render_format(*profile, o.format, &file, &error) ||
        !scriptprof::write_file_atomically(path, file, &error)) {
      std::fprintf(stderr, "%s: %s\n", program, error.c_str());
      ok = false;
    } else if (profiles.size() > 1) {
      text += "-o: the " + std::string(tags[static_cast<int>(kind)]) + " profile is in " + path + "\n";
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
