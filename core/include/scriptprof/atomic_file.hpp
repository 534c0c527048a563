// Files are never left half-written under their final name.
#pragma once
#include <string>

namespace scriptprof {

// Writes `content` to a temporary file beside `path`, then renames it over `path`.
// On failure returns false, leaves `path` untouched and says why (naming the path) in `error`.
bool write_file_atomically(const std::string& path, const std::string& content, std::string* error);

}  // namespace scriptprof
