#include "luaprof_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "exit_status.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/version.hpp"
#ifdef SCRIPTPROF_HTTP
#include "scriptprof/profile_server.hpp"
#endif

namespace luaprof {

namespace {

const Unsupported* unsupported(const Frontend& fe, const char* option) {
  for (const Unsupported& u : fe.unsupported)
    if (std::strcmp(u.option, option) == 0) return &u;
  return nullptr;
}

}  // namespace

void usage(FILE* out, const Frontend& fe) {
  if (!fe.lua_options) {
    std::fprintf(out,
        "usage: %s [options] %s [args...]\n"
        "Runs %s as %s would and prints a statprof flat profile when it ends.\n",
        fe.program, fe.script, fe.script, fe.interpreter);
  } else {
    std::fprintf(out,
        "usage: %s [options] [lua options] [%s [args...]]\n"
        "Runs %s as %s would and prints a statprof flat profile when it ends.\n"
        "lua options, as %s's, run in order under the profiler:\n"
        "  -e stat  execute string 'stat'      -l mod  require 'mod' into global 'mod' (g=mod: 'g')\n",
        fe.program, fe.script, fe.script, fe.interpreter, fe.interpreter);
    if (fe.jit_options)
      std::fprintf(out, "  -j cmd   perform LuaJIT control command  -O[opt]  control LuaJIT optimizations\n");
    else
      std::fprintf(out, "  -W       turn warnings on\n");
    std::fprintf(out,
        "  -E       ignore environment variables\n"
        "  -        run standard input         --      stop handling options\n");
  }
  // The run options, from the table every front end shares.
  for (const auto& spec : scriptprof::run_option_specs()) {
    if (!spec.flag || unsupported(fe, spec.name)) continue;
    std::string left = std::string(spec.flag) + (spec.arg ? std::string(" ") + spec.arg : "");
    if (left.size() < 18) std::fprintf(out, "  %-18s%s\n", left.c_str(), spec.help);
    else std::fprintf(out, "  %s\n  %-18s%s\n", left.c_str(), "", spec.help);
  }
  std::fprintf(out, "                    (with %s, time is sampled only if --hz is given)\n",
               unsupported(fe, "gc") ? "--alloc" : "--gc or --alloc");
  std::fprintf(out,
      "  --annotate NAME   print NAME's source with the share of samples on each line (repeatable)\n"
      "  --hide NAME       fold NAME into its callers in the allegro styles (repeatable)\n"
      "  --hide-package P  fold functions whose file or name starts with P (repeatable)\n"
      "  --report FILE     write the report to FILE instead of standard output\n"
      "  --style NAME      the report: flat (default), flat-guile2, tree, anomalies, gprof,\n"
      "                    gprof-callgraph, allegro, allegro-callgraph, call-counts, frames\n"
      "  --slowest-frames N  the frames style lists the N slowest frames (default 5)\n"
      "  -o FILE           also write the profile to FILE in --format (guessed from .tree, .folded,\n"
      "                    .speedscope.json, .pb.gz, .html, .json (chrome), .sampler, .csv (lms));\n"
      "%s"
      "  --format NAME     lispworks, folded, speedscope, chrome, pprof, html, sampler or lms\n"
      "  --serve ADDRESS   while the script runs, serve Go's /debug/pprof endpoints at ADDRESS\n"
      "                    (127.0.0.1:6060; :0 takes a free port): go tool pprof\n"
      "                    http://ADDRESS/debug/pprof/profile?seconds=30; no report at the end\n"
      "  --continuous HZ   with --serve: sample at HZ (19 is usual) between requests and keep the\n"
      "                    last --window SECONDS (default 600) for /debug/scriptprof/recent\n"
      "%s"
      "  --help            this text\n"
      "  --version         the profiler's version\n"
      "  --                end of options\n",
      unsupported(fe, "gc") ? "                    with --alloc too the space profile goes beside it: FILE.space.EXT\n"
                            : "                    with several profiles (--gc, --alloc) the others go beside it: FILE.gc.EXT,\n"
                              "                    FILE.space.EXT\n",
      fe.other_lua ? "  --lua PATH        run the script under the Lua interpreter PATH (lua5.1 to 5.5, luajit)\n"
                     "                    with the profiler module built for it\n"
                   : "");
  std::fputs(cli::kStatusHelp, out);
  if (fe.other_lua) std::fputs("  with --lua: 126 PATH cannot be run, 127 no such PATH\n", out);
}

namespace {
const Frontend* g_fe = nullptr;  // the program parsing (its name in messages)
}  // namespace

[[noreturn]] void bad_usage(const std::string& message) {
  std::fprintf(stderr, "%s: %s\nTry '%s --help' for the options.\n", g_fe->program, message.c_str(), g_fe->program);
  std::exit(cli::kUsage);
}

// A command line that parses, naming something that cannot serve: one line, nothing runs.
[[noreturn]] void bad_input(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", g_fe->program, message.c_str());
  std::exit(cli::kUsage);
}

// Options come before the script; the script and everything after it are the script's, as for
// lua5.4 (CLI11's prefix_command stops at the first item it does not know).
Options parse_options(int argc, char** argv, const Frontend& fe) {
  g_fe = &fe;
  Options o;
  CLI::App app{fe.program};
  app.prefix_command();
  app.set_help_flag();  // our own usage text below
  std::string slowest;
  bool help = false, version = false;
  // The run options from the shared table: a switch is a flag, the others take a value that
  // the table reads (and checks) after parsing.
  const auto& specs = scriptprof::run_option_specs();
  std::vector<std::string> values(specs.size());
  std::vector<CLI::Option*> given(specs.size(), nullptr);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].flag) continue;
    given[i] = specs[i].arg ? app.add_option(specs[i].flag, values[i]) : app.add_flag(specs[i].flag);
  }
  app.add_option("--annotate", o.annotate)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--hide", o.report.allegro.hidden)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--hide-package", o.report.allegro.hidden_packages)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--report", o.report_file);
  app.add_option("--style", o.style);
  app.add_option("--slowest-frames", slowest);
  app.add_option("-o", o.output);
  app.add_option("--format", o.format);
  app.add_option("--serve", o.serve);
  std::string continuous, window;
  app.add_option("--continuous", continuous);
  app.add_option("--window", window);
  app.add_flag("-h,--help", help);
  app.add_flag("--version", version);
  if (fe.other_lua) app.add_option("--lua", o.other_lua);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    bad_usage(e.what());
  }
  if (help) {
    usage(stdout, fe);
    std::exit(EXIT_SUCCESS);
  }
  if (version) {
    std::printf("%s (scriptprof) %s, %s\n", fe.program, SCRIPTPROF_VERSION, fe.version);
    std::exit(EXIT_SUCCESS);
  }
  // A chunk loaded from a string is its own source text: kept only when it is to be printed.
  o.keep_chunk_text = !o.annotate.empty();
  if (!o.annotate.empty()) o.run.lines = true;  // per-line self time, wherever it costs
  // lua5.4's options (lua.c's collectargs): from the first item CLI11 left to the script.
  std::vector<std::string> rest = app.remaining();
  std::size_t k = 0;
  for (; k < rest.size(); ++k) {
    const std::string& a = rest[k];
    if (a.size() < 2 || a[0] != '-') break;  // the script, or "-" for standard input
    if (a == "--") {
      ++k;
      break;
    }
    if (!fe.lua_options) bad_usage("unknown option '" + a + "'");
    char kind = a[1];
    if ((kind == 'e' || kind == 'l')) {
      std::string value = a.substr(2);
      if (value.empty()) {
        if (++k >= rest.size() || rest[k].empty() || rest[k][0] == '-')
          bad_usage(std::string("'-") + kind + "' needs argument");
        value = rest[k];
      }
      o.lua_args.push_back({kind, value});
    } else if (a == "-W" && !fe.jit_options) {
      o.lua_args.push_back({'W', ""});
    } else if (kind == 'j' && fe.jit_options) {
      std::string value = a.substr(2);
      if (value.empty()) {
        if (++k >= rest.size() || rest[k].empty() || rest[k][0] == '-') bad_usage("'-j' needs argument");
        value = rest[k];
      }
      o.lua_args.push_back({'j', value});
    } else if (kind == 'O' && fe.jit_options) {
      o.lua_args.push_back({'O', a.substr(2)});
    } else if (a == "-E") {
      o.no_env = true;
    } else if (a == "-i" || a == "-v") {
      bad_usage("'" + a + "' is not supported: " + fe.program + " runs a script, not the interactive interpreter");
    } else {
      bad_usage("unknown option '" + a + "'");
    }
  }
  bool has_e = std::any_of(o.lua_args.begin(), o.lua_args.end(), [](const Options::LuaArg& l) { return l.kind == 'e'; });
  if (k == rest.size() && !has_e) bad_usage("no script given");
  o.script = argc - static_cast<int>(rest.size() - k);
  bool time_asked = false, space_asked = false;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!given[i] || given[i]->count() == 0) continue;
    if (const Unsupported* u = unsupported(fe, specs[i].name)) bad_usage(std::string(specs[i].flag) + ": " + u->why);
    // A flag's value is what its usage says (--hz N), never a Lua boolean: `--hz false` would
    // turn time sampling off without a word (the Lua option's hz = false; here --gc or --alloc
    // without --hz does it).
    if (specs[i].arg && (values[i] == "true" || values[i] == "false"))
      bad_usage(std::string(specs[i].flag) + " takes " + specs[i].arg + ", got " + values[i]);
    std::string error;
    bool ok = specs[i].arg ? scriptprof::parse_run_option(&o.run, specs[i].name, values[i], &error)
                           : scriptprof::set_run_option(&o.run, specs[i].name, scriptprof::OptionValue::of_bool(true), &error);
    if (!ok) bad_usage(std::string(specs[i].flag) + " " + error);
    time_asked |= std::strcmp(specs[i].name, "hz") == 0;
    space_asked |= std::strcmp(specs[i].name, "gc") == 0 || std::strcmp(specs[i].name, "alloc") == 0;
  }
  if (!slowest.empty()) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(slowest.c_str(), &end, 10);
    if (slowest[0] == '-' || end == slowest.c_str() || *end != '\0' || errno == ERANGE)
      bad_usage("--slowest-frames: '" + slowest + "' is not an integer >= 0");
    o.report.slowest_frames = static_cast<std::size_t>(v);
  }
  if (space_asked && !time_asked) o.run.sample_time = false;
  if (!continuous.empty() || !window.empty()) {
    if (o.serve.empty()) bad_usage("--continuous and --window go with --serve");
    char* end = nullptr;
    if (!continuous.empty()) {
      o.continuous = std::strtod(continuous.c_str(), &end);
      if (end == continuous.c_str() || *end || !(o.continuous > 0 && o.continuous <= 1000))
        bad_usage("--continuous: '" + continuous + "' is not a rate from 0 to 1000 Hz (19 is usual)");
    }
    if (!window.empty()) {
      errno = 0;
      const unsigned long long w = std::strtoull(window.c_str(), &end, 10);
      if (window[0] == '-' || end == window.c_str() || *end || errno == ERANGE || w < 1 || w > 86400)
        bad_usage("--window: '" + window + "' is not a number of seconds from 1 to 86400");
      o.window = w;
    }
  }
  if (o.serve.empty()) {
    for (const auto& spec : scriptprof::run_option_specs())
      if (std::strcmp(spec.name, "heap") == 0 && given[static_cast<std::size_t>(&spec - specs.data())] &&
          given[static_cast<std::size_t>(&spec - specs.data())]->count())
        bad_usage("--heap goes with --serve: the in-use heap is served (/debug/pprof/heap)");
  }
  if (!o.serve.empty()) {
#ifdef SCRIPTPROF_HTTP
    std::string host, error;
    int port = 0;
    if (!scriptprof::parse_listen_address(o.serve, &host, &port, &error)) bad_usage("--serve: " + error);
#else
    bad_usage("--serve: this build has no profile server (build with libcpp-httplib-dev installed)");
#endif
    // A served run's profiles are the ones its clients ask for: time, and the heap.
    for (const auto& spec : scriptprof::run_option_specs()) {
      const auto i = static_cast<std::size_t>(&spec - specs.data());
      const bool allowed = std::strcmp(spec.name, "hz") == 0 || std::strcmp(spec.name, "clock") == 0 ||
                           std::strcmp(spec.name, "signal") == 0 || std::strcmp(spec.name, "heap") == 0;
      if (given[i] && given[i]->count() && !allowed)
        bad_usage(std::string("--serve serves time and heap profiles to its clients: ") + spec.flag + " does not go with it");
    }
    if (!o.output.empty() || !o.report_file.empty() || !o.annotate.empty() || o.style != "flat")
      bad_usage("--serve serves its profiles to clients: -o, --report, --style and --annotate do not go with it");
#ifdef SCRIPTPROF_HTTP
    scriptprof::make_served(o.run);
#endif
  }
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
    o.format = scriptprof::format_for_path(o.output);
    if (o.format.empty())
      bad_usage("-o " + o.output + ": name the format with --format (lispworks, folded, speedscope, chrome, pprof, html, sampler, lms)");
  }
  // Timelines need the samples in time order.
  if (o.format == "chrome" || o.format == "lms") o.run.full_stacks = true;
  // What the run will read and write, checked before it runs: a bad path must not cost the run.
  if (o.script < argc) {
    const std::string script = argv[o.script];
    const bool from_stdin = script == "-" && std::strcmp(argv[o.script - 1], "--") != 0;
    if (!from_stdin) {
      FILE* f = std::fopen(script.c_str(), "r");
      if (!f) bad_input("cannot open " + script + ": " + std::strerror(errno));
      std::fclose(f);
    }
  }
  for (const std::string* path : {&o.output, &o.report_file}) {
    std::string error;
    if (!path->empty() && !scriptprof::can_write_atomically(*path, &error))
      bad_input((path == &o.output ? "-o: " : "--report: ") + error);
  }
  return o;
}

}  // namespace luaprof
