// The exit statuses of every tool: luaprof, luajitprof, asprof, profconv and profdiff (and the
// module's profiler.luaprof). A script's own status passes through (os.exit(n): n; an error:
// 1, as lua5.4 gives); the tools' own failures use the codes timeout(1) and env(1) keep for
// theirs, so a caller can tell the two apart.
#pragma once

namespace cli {

constexpr int kOk = 0;
constexpr int kFailed = 1;        // the run failed: the script raised an error (as lua5.4,
                                  // luajit); profconv, profdiff: an input could not be read
                                  // (malformed, too large) or converted
constexpr int kToolFailed = 124;  // after the run: a report or file asked for could not be made
                                  // or written (the run's results are lost), memory ran out
constexpr int kUsage = 125;       // a bad command line or input, found before anything ran
constexpr int kCannotRun = 126;   // luaprof --lua: the interpreter is there but cannot run
constexpr int kNotFound = 127;    // luaprof --lua: no such interpreter

// The lines each tool's --help ends with.
constexpr const char* kStatusHelp =
    "exit status: the script's own (1 after an error, as lua); 124 a report or file could not be\n"
    "  made or written; 125 a bad command line or input (nothing ran)\n";
constexpr const char* kToolStatusHelp =
    "exit status: 0 done; 1 an input could not be read or converted; 124 the output could not be\n"
    "  written; 125 a bad command line, or an input or output path that cannot be used\n";

}  // namespace cli
