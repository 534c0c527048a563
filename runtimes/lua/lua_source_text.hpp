// The text of a Lua chunk from its source name, for per-line reports (profiler.annotate).
#pragma once
#include <string>
#include <vector>

namespace scriptprof::lua {

// "@file.lua": the file's lines; "=name": none (no text); anything else is the chunk's own text.
// Returns false with a reason when the text cannot be had.
bool source_lines(const std::string& source, std::vector<std::string>* lines, std::string* error);

}  // namespace scriptprof::lua
