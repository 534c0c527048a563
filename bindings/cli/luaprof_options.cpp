#include "luaprof_options.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "profiler_module.hpp"

namespace luaprof {

void usage(FILE* out) {
  std::fprintf(out,
      "usage: luaprof [options] script.lua [args...]\n"
      "Runs script.lua as lua5.4 would and prints a statprof flat profile when it ends.\n"
      "  --hz N            samples per second of the chosen clock (default 100, max 100000)\n"
      "  --clock cpu|wall  time the script runs on a CPU (default) or elapsed time\n"
      "  --calls           count every call exactly (slower)\n"
      "  --full-stacks     keep every sample, not only the call tree\n"
      "  --gc              also sample the stack after every garbage collection (statprof's gcprof)\n"
      "  --alloc BYTES     also sample the stack every BYTES allocated on average (space profile)\n"
      "                    (with --gc or --alloc, time is sampled only if --hz is given)\n"
      "  --max-samples N   stop collecting after N samples per profile (default 100000, 0: no bound)\n"
      "  --interpret-closures  keep closures of one function apart\n"
      "  --annotate NAME   print NAME's source with the share of samples on each line (repeatable)\n"
      "  --hide NAME       fold NAME into its callers in the allegro styles (repeatable)\n"
      "  --hide-package P  fold functions whose file or name starts with P (repeatable)\n"
      "  --report FILE     write the report to FILE instead of standard output\n"
      "  --style NAME      the report: flat (default), flat-guile2, tree, anomalies, gprof,\n"
      "                    gprof-callgraph, allegro, allegro-callgraph, call-counts, frames\n"
      "  --slowest-frames N  the frames style lists the N slowest frames (default 5)\n"
      "  -o FILE           also write the profile to FILE in --format (guessed from .tree, .folded,\n"
      "                    .speedscope.json, .pb.gz)\n"
      "  --format NAME     lispworks, folded, speedscope, chrome, pprof, html, sampler or lms\n"
      "  --help            this text\n"
      "  --version         the profiler's version\n"
      "  --                end of options\n");
}

[[noreturn]] void bad_usage(const std::string& message) {
  std::fprintf(stderr, "luaprof: %s\nTry 'luaprof --help' for the options.\n", message.c_str());
  std::exit(EXIT_FAILURE);
}

// Options come before the script; the script and everything after it are the script's, as for
// lua5.4 (CLI11's prefix_command stops at the first item it does not know).
Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app{"luaprof"};
  app.prefix_command();
  app.set_help_flag();  // our own usage text below
  std::string hz, clock, alloc, max_samples, slowest;
  bool help = false, version = false, gc = false;
  app.add_option("--hz", hz);
  app.add_option("--clock", clock);
  app.add_flag("--calls", o.sampler.count_calls);
  app.add_flag("--full-stacks", o.sampler.full_stacks);
  app.add_flag("--gc", gc);
  app.add_option("--alloc", alloc);
  app.add_option("--max-samples", max_samples);
  app.add_flag("--interpret-closures", o.sampler.interpret_closures);
  app.add_option("--annotate", o.annotate)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--hide", o.report.allegro.hidden)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--hide-package", o.report.allegro.hidden_packages)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--report", o.report_file);
  app.add_option("--style", o.style);
  app.add_option("--slowest-frames", slowest);
  app.add_option("-o", o.output);
  app.add_option("--format", o.format);
  app.add_flag("-h,--help", help);
  app.add_flag("--version", version);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    bad_usage(e.what());
  }
  if (help) {
    usage(stdout);
    std::exit(EXIT_SUCCESS);
  }
  if (version) {
    std::printf("luaprof (scriptprof) 0.1.0, %s\n", LUA_RELEASE);
    std::exit(EXIT_SUCCESS);
  }
  // A chunk loaded from a string is its own source text: kept only when it is to be printed.
  o.sampler.keep_chunk_text = !o.annotate.empty();
  std::vector<std::string> rest = app.remaining();
  bool dashdash = !rest.empty() && rest[0] == "--";
  if (dashdash) rest.erase(rest.begin());
  if (rest.empty()) bad_usage("no script given");
  if (!dashdash && rest[0].size() > 1 && rest[0][0] == '-') bad_usage("unknown option '" + rest[0] + "'");
  o.script = argc - static_cast<int>(rest.size());
  if (!hz.empty()) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(hz.c_str(), &end);
    std::string error;
    if (end == hz.c_str() || *end != '\0' || errno == ERANGE) bad_usage("--hz: '" + hz + "' is not a number");
    if (!scriptprof::lua::parse_hz(v, &o.sampler.period_ns, &error)) bad_usage("--hz: " + error);
  }
  auto count = [&](const std::string& text, const char* option, std::uint64_t min) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || end == text.c_str() || *end != '\0' || errno == ERANGE || v < min)
      bad_usage(std::string(option) + ": '" + text + "' is not an integer >= " + std::to_string(min));
    return static_cast<std::uint64_t>(v);
  };
  o.sampler.gc_samples = gc;
  if (!alloc.empty()) o.sampler.alloc_bytes = count(alloc, "--alloc", 1);
  if (!max_samples.empty()) o.sampler.max_samples = count(max_samples, "--max-samples", 0);
  if (!slowest.empty()) o.report.slowest_frames = count(slowest, "--slowest-frames", 0);
  if ((gc || !alloc.empty()) && hz.empty()) o.sampler.sample_time = false;
  if (clock == "wall") o.sampler.clock = scriptprof::TimerClock::Wall;
  else if (!clock.empty() && clock != "cpu") bad_usage("--clock must be cpu or wall, got '" + clock + "'");
  {
    std::string text, error;
    if (!scriptprof::render_report(scriptprof::Profile{}, o.style, &text, &error)) bad_usage("--style: " + error);
  }
  if (!o.format.empty()) {
    const auto& known = scriptprof::file_formats();
    if (std::find(known.begin(), known.end(), o.format) == known.end()) {
      std::string text, error;
      scriptprof::render_format(scriptprof::Profile{}, o.format, &text, &error);  // says why
      bad_usage("--format: " + error);
    }
  }
  if (!o.output.empty() && o.format.empty()) {
    auto ends = [&](const char* ext) {
      std::string e = ext;
      return o.output.size() > e.size() && o.output.compare(o.output.size() - e.size(), e.size(), e) == 0;
    };
    if (ends(".tree")) o.format = "lispworks";
    else if (ends(".folded")) o.format = "folded";
    else if (ends(".speedscope.json")) o.format = "speedscope";
    else if (ends(".pb.gz") || ends(".pprof")) o.format = "pprof";
    else if (ends(".html")) o.format = "html";
    else if (ends(".sampler")) o.format = "sampler";
    else if (ends(".csv")) o.format = "lms";
    else bad_usage("-o " + o.output + ": name the format with --format (lispworks, folded, speedscope, chrome, pprof, html, sampler, lms)");
  }
  // Timelines need the samples in time order.
  if (o.format == "chrome" || o.format == "lms") o.sampler.full_stacks = true;
  return o;
}

}  // namespace luaprof
