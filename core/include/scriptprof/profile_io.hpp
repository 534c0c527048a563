// Every report style and file format by name, the one place the bindings (Lua module, luaprof,
// profconv) look them up.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/allegro_report.hpp"
#include "scriptprof/profile.hpp"
#include "scriptprof/statprof_flat_report.hpp"

namespace scriptprof {

// Report styles implemented now ("flat", "flat-guile2", "tree", "anomalies") and file formats
// ("lispworks", "folded"), and which formats can be read.
const std::vector<std::string>& report_styles();
const std::vector<std::string>& file_formats();
const std::vector<std::string>& readable_formats();

// What the report styles can be told (each style reads the options that concern it).
struct ReportOptions {
  FlatReportOptions flat;      // flat/flat-guile2/tree/anomalies: labels, cumulative mode
  AllegroOptions allegro;      // allegro/allegro-callgraph: thresholds, hidden functions
  std::size_t slowest_frames = 5;  // frames: how many of the slowest frames to list
};

// Renders a report style; false with a message naming the known styles for an unknown one.
bool render_report(const Profile& profile, std::string_view style, std::string* out, std::string* error,
                   const ReportOptions& options = {});
// What the file formats can be told.
struct FormatOptions {
  bool evented = false;       // speedscope: open/close events instead of samples
  bool thread_level = false;  // lispworks: a node per thread even with one thread
};

// Renders a file format; false with a message for an unknown one or one that cannot be made.
bool render_format(const Profile& profile, std::string_view format, std::string* out, std::string* error,
                   const FormatOptions& options = {});

// The format a file name asks for by its extension: .tree, .folded, .speedscope.json, .pb.gz or
// .pprof, .html, .json (Chrome), .sampler, .csv (lms); "" when it names none.
std::string format_for_path(std::string_view path);
// `path` with `tag` before its format extension ("run.folded", "gc": "run.gc.folded"; no known
// extension: appended), for the other profiles of a run written beside the first.
std::string tagged_path(std::string_view path, std::string_view tag);
// Whether a format's bytes are binary (not for a terminal): pprof.
bool is_binary_format(std::string_view format);

// Guesses a readable format from a file's first bytes ("" when it cannot tell).
std::string guess_format(std::string_view text);

// Parses `text` as `format` (guessed when empty) into `out`.
bool read_profile_text(std::string_view text, std::string_view format, Profile* out, std::string* error,
                       std::vector<std::string>* warnings = nullptr);

// Reads a file: refuses files larger than `max_bytes` rather than exhausting memory; errors
// name the path ("profile.tree: line 3: ...").
bool read_profile_file(const std::string& path, std::string_view format, Profile* out, std::string* error,
                       std::vector<std::string>* warnings = nullptr, std::uint64_t max_bytes = 1ull << 30);
// Whether read_profile_file could open `path` now: a tool checks its inputs before any work.
// False with the message read_profile_file would give.
bool can_open_profile_file(const std::string& path, std::string* error);

}  // namespace scriptprof
