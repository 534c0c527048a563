#include "lua_source_text.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace scriptprof::lua {

namespace {

void split_lines(const std::string& text, std::vector<std::string>* lines) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines->push_back(line);
  }
}

}  // namespace

bool source_lines(const std::string& source, std::vector<std::string>* lines, std::string* error) {
  lines->clear();
  if (source.empty() || source[0] == '=') {
    *error = "no source text for chunk '" + (source.empty() ? source : source.substr(1)) + "'";
    return false;
  }
  if (source[0] != '@') {
    split_lines(source, lines);
    return true;
  }
  std::ifstream in(source.substr(1), std::ios::binary);
  if (!in) {
    *error = "cannot open " + source.substr(1) + ": " + std::strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  split_lines(text.str(), lines);
  // A first line starting with '#' is skipped by Lua's loader but still counts as line 1.
  return true;
}

}  // namespace scriptprof::lua
