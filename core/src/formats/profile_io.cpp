#include "scriptprof/profile_io.hpp"

#include "scriptprof/call_stats.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "scriptprof/allegro_report.hpp"
#include "scriptprof/folded_stacks.hpp"
#include "scriptprof/frame_report.hpp"
#include "scriptprof/gprof_report.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/interval_formats.hpp"
#include "scriptprof/lispworks_tree.hpp"
#include "scriptprof/statprof_flat_report.hpp"
#include "scriptprof/statprof_tree_report.hpp"

namespace scriptprof {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "unknown format 'pdf' (known: lispworks, folded, ...)": the error names every choice.
std::string unknown_name(const char* what, std::string_view name, const std::vector<std::string>& known) {
  return "unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + joined(known) + ")";
}

}  // namespace

const std::vector<std::string>& report_styles() {
  static const std::vector<std::string> names = {"flat", "flat-guile2", "tree", "anomalies", "gprof", "gprof-callgraph", "allegro", "allegro-callgraph", "call-counts", "frames"};
  return names;
}
const std::vector<std::string>& file_formats() {
  static const std::vector<std::string> names = {"lispworks", "folded", "speedscope", "chrome", "pprof", "html", "sampler", "lms"};
  return names;
}
const std::vector<std::string>& readable_formats() {
  static const std::vector<std::string> names = {"lispworks", "folded", "speedscope", "sampler", "lms"};
  return names;
}

bool render_report(const Profile& p, std::string_view style, std::string* out, std::string* error,
                   const ReportOptions& options) {
  if (style == "flat") {
    *out = statprof_flat_report(p, options.flat);
  } else if (style == "flat-guile2") {
    FlatReportOptions o = options.flat;
    o.layout = FlatLayout::Guile2;
    *out = statprof_flat_report(p, o);
  } else if (style == "tree") {
    *out = statprof_tree_report(p, options.flat.labels);
  } else if (style == "anomalies") {
    *out = statprof_anomalies_report(p, options.flat.labels);
  } else if (style == "allegro") {
    *out = allegro_flat_report(p, options.allegro);
  } else if (style == "allegro-callgraph") {
    *out = allegro_call_graph(p, options.allegro);
  } else if (style == "frames") {
    *out = frame_report(p, options.slowest_frames);
  } else if (style == "call-counts") {
    *out = allegro_call_counts(p);
  } else if ((style == "gprof" || style == "gprof-callgraph") &&
             (p.clock == ClockKind::Alloc || p.clock == ClockKind::Gc)) {
    *error = "report style '" + std::string(style) + "' shows time; for a " +
             (p.clock == ClockKind::Gc ? "gc" : "space") + " profile use flat, tree, allegro or allegro-callgraph";
    return false;
  } else if (style == "gprof") {
    *out = gprof_flat_report(p);
  } else if (style == "gprof-callgraph") {
    *out = gprof_call_graph(p);
  } else {
    *error = unknown_name("report style", style, report_styles());
    return false;
  }
  return true;
}

bool render_format(const Profile& p, std::string_view format, std::string* out, std::string* error,
                   const FormatOptions& options) {
  if (format == "lispworks") {
    LispWorksWriteOptions o;
    o.thread_level = options.thread_level;
    *out = write_lispworks_tree(p, o);
  } else if (format == "folded") {
    *out = write_folded(p);
  } else if (format == "speedscope" && p.clock != ClockKind::Alloc &&
             static_cast<double>(p.sample_weight()) * seconds_per_sample(p) * 1e9 > 4.6e18) {
    // Its weights are nanoseconds, which readers (ours included) take up to 2^62.
    *error = "a speedscope file's weights are nanoseconds: " + std::to_string(p.sample_weight()) +
             " samples make more than 2^62 of them";
    return false;
  } else if (format == "speedscope") {
    if (options.evented) return write_speedscope_evented(p, out, error);
    *out = write_speedscope(p);
  } else if (format == "chrome") {
    return write_chrome_trace(p, out, error);
  } else if (format == "sampler") {
    return write_sampler(p, out, error);
  } else if (format == "lms") {
    return write_lms_csv(p, out, error);
  } else if (format == "html") {
    *out = write_html_flame_graph(p);
  } else if (format == "pprof") {
    *out = write_pprof(p);
  } else {
    *error = unknown_name("format", format, file_formats());
    return false;
  }
  return true;
}

namespace {
// Longest first: ".speedscope.json" before ".json".
constexpr std::pair<std::string_view, std::string_view> kExtensions[] = {
    {".speedscope.json", "speedscope"}, {".tree", "lispworks"}, {".folded", "folded"},
    {".pb.gz", "pprof"}, {".pprof", "pprof"}, {".html", "html"}, {".json", "chrome"},
    {".sampler", "sampler"}, {".csv", "lms"}};

// The known extension `path` ends with, or empty.
std::string_view known_extension(std::string_view path) {
  for (const auto& [ext, format] : kExtensions)
    if (path.size() > ext.size() && path.substr(path.size() - ext.size()) == ext) return ext;
  return {};
}
}  // namespace

std::string format_for_path(std::string_view path) {
  std::string_view ext = known_extension(path);
  for (const auto& [e, format] : kExtensions)
    if (e == ext && !ext.empty()) return std::string(format);
  return "";
}

std::string tagged_path(std::string_view path, std::string_view tag) {
  std::string_view ext = known_extension(path);
  std::string out(path.substr(0, path.size() - ext.size()));
  out += ".";
  out += tag;
  out += ext;
  return out;
}

bool is_binary_format(std::string_view format) { return format == "pprof"; }

std::string guess_format(std::string_view text) {
  std::string_view first = text.substr(0, text.find('\n'));
  if (first.find("LispWorks Profiler Tree") != std::string_view::npos) return "lispworks";
  if (text.substr(0, 18) == "@supersamplerV1.0\n") return "sampler";
  if (first.size() >= 4 && first.substr(0, 2) == "2," && first.find(',', 2) != std::string_view::npos) return "lms";
  if (text.substr(0, 200).find("\"https://www.speedscope.app/file-format-schema.json\"") != std::string_view::npos)
    return "speedscope";
  if (first.rfind("# scriptprof ", 0) == 0) return "folded";  // our folded files' time line
  // Folded: "frames count" lines.
  if (!first.empty() && first.back() >= '0' && first.back() <= '9' && first.find(' ') != std::string_view::npos)
    return "folded";
  return "";
}

bool read_profile_text(std::string_view text, std::string_view format, Profile* out, std::string* error,
                       std::vector<std::string>* warnings) {
  std::string f = format.empty() ? guess_format(text) : std::string(format);
  if (f.empty()) {
    *error = "cannot tell the format (readable: " + joined(readable_formats()) + "); name it";
    return false;
  }
  if (f == "lispworks") return read_lispworks_tree(text, out, error, warnings);
  if (f == "folded") return read_folded(text, out, error, warnings);
  if (f == "speedscope") return read_speedscope(text, out, error, warnings);
  if (f == "sampler") return read_sampler(text, out, error, warnings);
  if (f == "lms") return read_lms_csv(text, out, error);
  *error = "cannot read format '" + f + "' (readable: " + joined(readable_formats()) + ")";
  return false;
}

namespace {
std::string open_error(const std::string& path, int err) { return "cannot open '" + path + "': " + std::strerror(err); }
}  // namespace

bool can_open_profile_file(const std::string& path, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (error) *error = open_error(path, errno);
    return false;
  }
  std::fclose(f);
  return true;
}

bool read_profile_file(const std::string& path, std::string_view format, Profile* out, std::string* error,
                       std::vector<std::string>* warnings, std::uint64_t max_bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = open_error(path, errno);
    return false;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    std::fclose(f);
    *error = "'" + path + "' is " + std::to_string(st.st_size) + " bytes, above the limit of " +
             std::to_string(max_bytes) + " bytes";
    return false;
  }
  std::string text;
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
    if (text.size() > max_bytes) {
      std::fclose(f);
      *error = "'" + path + "' is above the limit of " + std::to_string(max_bytes) + " bytes";
      return false;
    }
  }
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) {
    *error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::string inner;
  if (!read_profile_text(text, format, out, &inner, warnings)) {
    *error = path + ": " + inner;
    return false;
  }
  if (warnings)
    for (auto& w : *warnings) w = path + ": " + w;
  return true;
}

}  // namespace scriptprof
