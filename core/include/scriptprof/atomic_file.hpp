// Files are never left half-written under their final name.
#pragma once
#include <string>

namespace scriptprof {

// Writes `content` to a temporary file beside `path`, then renames it over `path`.
// On failure returns false, leaves `path` untouched and says why (naming the path) in `error`.
bool write_file_atomically(const std::string& path, const std::string& content, std::string* error);
// Whether write_file_atomically could write `path` now (its folder takes a new file, and `path`
// is no folder): a tool checks its outputs before a run, so that a bad path does not lose it.
// False with the same message write_file_atomically would give.
bool can_write_atomically(const std::string& path, std::string* error);

}  // namespace scriptprof
