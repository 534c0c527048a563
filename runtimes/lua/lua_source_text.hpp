// The text of a Lua chunk from its source name: for per-line reports (profiler.annotate) and
// for the names functions are declared under. Read with C stdio, not iostreams: a profiled run
// that reads a chunk would otherwise touch some 400 KB of libstdc++'s stream and locale code,
// resident memory the program never asked for.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace scriptprof::lua {

// "@file.lua": the file's text; "=name": none (no text); anything else is the chunk's own text.
// Returns false with a reason when the text cannot be had.
bool source_text(std::string_view source, std::string* text, std::string* error);

// The same text as lines (a trailing '\r' dropped from each).
bool source_lines(const std::string& source, std::vector<std::string>* lines, std::string* error);

}  // namespace scriptprof::lua
