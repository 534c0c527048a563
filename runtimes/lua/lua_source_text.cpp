#include "lua_source_text.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace scriptprof::lua {

bool source_text(std::string_view source, std::string* text, std::string* error) {
  text->clear();
  if (source.empty() || source[0] == '=') {
    *error = "no source text for chunk '" + std::string(source.substr(source.empty() ? 0 : 1)) + "'";
    return false;
  }
  if (source[0] != '@') {
    text->assign(source);
    return true;
  }
  const std::string path(source.substr(1));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  char buffer[16384];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text->append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) *error = "cannot read " + path;
  return !failed;
}

bool source_lines(const std::string& source, std::vector<std::string>* lines, std::string* error) {
  lines->clear();
  std::string text;
  if (!source_text(source, &text, error)) return false;
  // A first line starting with '#' is skipped by Lua's loader but still counts as line 1.
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::size_t stop = end > start && text[end - 1] == '\r' ? end - 1 : end;
    lines->emplace_back(text, start, stop - start);
    start = end + 1;
  }
  return true;
}

}  // namespace scriptprof::lua
