// profdiff: compares two saved profiles of the same program (the run before a change and the
// run after): per-function change of self share, self and cumulative seconds, most changed
// first; with --html, a differential flame graph (the viewer, frames red where their stack took
// more time than in the base run and blue where it took less); with --folded, flamegraph.pl's
// input for one.
//   profdiff base.tree new.tree [--limit N] [--html diff.html] [--folded diff.folded]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <new>
#include <cstdlib>
#include <string>
#include <vector>

#include "exit_status.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/function_matching.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/profile_diff.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/version.hpp"

namespace {

[[noreturn]] void fail(const std::string& message, int status = cli::kUsage) {
  std::fprintf(stderr, "profdiff: %s\n", message.c_str());
  std::exit(status);
}

scriptprof::Profile read(const std::string& path, const std::string& format) {
  scriptprof::Profile p;
  std::string error;
  std::vector<std::string> warnings;
  if (!scriptprof::read_profile_file(path, format, &p, &error, &warnings)) fail(error, cli::kFailed);
  for (const auto& w : warnings) std::fprintf(stderr, "profdiff: warning: %s\n", w.c_str());
  if (p.name.empty()) p.name = path;
  return p;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"profdiff: compares two profiles of the same program (before and after a change)"};
  // Said before the inputs are required.
  app.set_version_flag("--version", std::string("profdiff (scriptprof) ") + SCRIPTPROF_VERSION);
  std::string base_path, new_path, from, folded, html;
  std::size_t limit = 20;
  app.add_option("base", base_path, "the profile before the change (any readable format)")->required();
  app.add_option("new", new_path, "the profile after it")->required();
  app.add_option("--from", from, "the inputs' format (default: guessed from their contents)");
  app.add_option("--limit", limit, "the most changed functions to list (0: all)")->capture_default_str();
  app.add_option("--html", html, "also write a differential flame graph of the new run against the base "
                                 "(one HTML file: red slower, blue faster; both runs' times on hover)");
  app.add_option("--folded", folded, "also write \"stack base new\" lines: a differential flame graph's input "
                                     "(flamegraph.pl; --negate for the other view)");
  app.footer(cli::kToolStatusHelp);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fail(std::string(e.what()) + "\nTry 'profdiff --help'.");
  }
  // The outputs checked before the inputs are read: one line, nothing done.
  for (const std::string* path : {&html, &folded}) {
    std::string error;
    if (!path->empty() && !scriptprof::can_write_atomically(*path, &error))
      fail((path == &html ? "--html: " : "--folded: ") + error);
  }
  for (const std::string* path : {&base_path, &new_path}) {
    std::string error;
    if (!scriptprof::can_open_profile_file(*path, &error)) fail(error);
  }
  scriptprof::Profile base = read(base_path, from), now = read(new_path, from);
  // The base run's functions take the labels of the new run's they match (their lines moved,
  // their files sit in another checkout), so the stacks of both flame graphs compare.
  scriptprof::align_labels(&base, now);
  if (base.clock != now.clock)
    std::fprintf(stderr, "profdiff: warning: the profiles' clocks differ: their seconds do not compare\n");
  std::string text = scriptprof::diff_report(base, now, limit);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::string error;
  if (!html.empty() && !scriptprof::write_file_atomically(html, scriptprof::write_html_flame_graph(now, &base), &error))
    fail(error, cli::kToolFailed);
  if (!folded.empty() && !scriptprof::write_file_atomically(folded, scriptprof::diff_folded(base, now), &error))
    fail(error, cli::kToolFailed);
  if (std::fflush(stdout) != 0) fail("cannot write the output", cli::kToolFailed);
  return cli::kOk;
} catch (const std::bad_alloc&) {
  // A profile too large for this machine's memory is a failed run with a reason, never an abort.
  fail("out of memory: the profile is too large to process here", cli::kFailed);
}
