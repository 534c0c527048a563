// profconv: reads a saved profile and prints any report of it, or converts it to another format.
//   profconv IN [--from FMT] [--to FMT | --report STYLE] [-o OUT]
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <cstdlib>
#include <string>
#include <vector>

#include "exit_status.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/version.hpp"

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void usage(FILE* out) {
  std::fprintf(out,
      "usage: profconv IN [--from FMT] [--to FMT | --report STYLE] [-o OUT]\n"
      "Reads a saved profile (format guessed from its contents unless --from names it) and\n"
      "prints a report (default: flat) or writes it in another format (--to, else guessed from\n"
      "OUT's extension: .tree .folded .speedscope.json .pb.gz .html .json .sampler .csv).\n"
      "  readable formats: %s\n  formats: %s\n  report styles: %s\n"
      "  --help, --version\n%s",
      joined(scriptprof::readable_formats()).c_str(), joined(scriptprof::file_formats()).c_str(),
      joined(scriptprof::report_styles()).c_str(), cli::kToolStatusHelp);
}

[[noreturn]] void fail(const std::string& message, int status = cli::kUsage) {
  std::fprintf(stderr, "profconv: %s\n", message.c_str());
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) try {
  std::string in, from, to, report, out;
  bool help = false, version = false;
  CLI::App app{"profconv"};
  app.set_help_flag();  // our own usage text
  app.add_option("--from", from);
  app.add_option("--to", to);
  app.add_option("--report", report);
  app.add_option("-o", out);
  app.add_flag("-h,--help", help);
  app.add_flag("--version", version);
  app.add_option("input", in);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    fail(std::string(e.what()) + "\nTry 'profconv --help'.");
  }
  if (help) {
    usage(stdout);
    return EXIT_SUCCESS;
  }
  if (version) {
    std::printf("profconv (scriptprof) %s\n", SCRIPTPROF_VERSION);
    return EXIT_SUCCESS;
  }
  if (in.empty()) fail("no input file\nTry 'profconv --help'.");
  if (!to.empty() && !report.empty()) fail("--to and --report exclude each other");
  // -o names the format by its extension when --to does not (and no report was asked for).
  if (to.empty() && report.empty() && !out.empty()) to = scriptprof::format_for_path(out);
  if (out.empty() && scriptprof::is_binary_format(to) && isatty(STDOUT_FILENO))
    fail("'" + to + "' is binary: name a file with -o, or redirect the output");
  std::string error, text;
  // Names and the output checked before the input is read: one line, nothing done.
  if (!to.empty()) {
    const auto& known = scriptprof::file_formats();
    if (std::find(known.begin(), known.end(), to) == known.end()) {
      scriptprof::render_format(scriptprof::Profile{}, to, &text, &error);  // says which there are
      fail("--to: " + error);
    }
  } else if (!scriptprof::render_report(scriptprof::Profile{}, report.empty() ? "flat" : report, &text, &error)) {
    fail("--report: " + error);
  }
  if (!out.empty() && !scriptprof::can_write_atomically(out, &error)) fail("-o: " + error);
  if (!scriptprof::can_open_profile_file(in, &error)) fail(error);
  scriptprof::Profile profile;
  std::vector<std::string> warnings;
  if (!scriptprof::read_profile_file(in, from, &profile, &error, &warnings)) fail(error, cli::kFailed);
  for (const auto& w : warnings) std::fprintf(stderr, "profconv: warning: %s\n", w.c_str());
  bool ok = to.empty() ? scriptprof::render_report(profile, report.empty() ? "flat" : report, &text, &error)
                       : scriptprof::render_format(profile, to, &text, &error);
  if (!ok) fail(error, cli::kFailed);
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0) fail(std::string("cannot write the output: ") + std::strerror(errno), cli::kToolFailed);
    return cli::kOk;
  }
  if (!scriptprof::write_file_atomically(out, text, &error)) fail(error, cli::kToolFailed);
  return cli::kOk;
} catch (const std::bad_alloc&) {
  // A profile too large for this machine's memory is a failed run with a reason, never an abort.
  fail("out of memory: the profile is too large to process here", cli::kFailed);
}
