#include "text_util.hpp"

#include <charconv>

#include "scriptprof/profile.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace scriptprof {

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string visible_text(std::string text) {
  auto control = [&](std::size_t i) -> int {  // bytes taken by a control at i, 0 if none
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) return 1;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F)
      return 2;
    return 0;
  };
  std::size_t i = 0;
  while (i < text.size() && !control(i)) ++i;
  if (i == text.size()) return text;  // the usual case: nothing to escape, no copy
  static const char kHex[] = "0123456789ABCDEF";
  std::string out = text.substr(0, i);
  for (; i < text.size(); ++i) {
    int n = control(i);
    if (!n) {
      out += text[i];
      continue;
    }
    const auto c = static_cast<unsigned char>(text[i + n - 1]);
    out += n == 1 ? "\\x" : "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 15];
    i += static_cast<std::size_t>(n - 1);
  }
  return out;
}

std::string printf_string(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < static_cast<int>(sizeof buf)) return buf;
  std::string big(static_cast<std::size_t>(n) + 1, '\0');  // a long name: format again, whole
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.pop_back();
  return big;
}

bool next_line(std::string_view text, std::size_t* pos, std::string_view* line) {
  if (*pos >= text.size()) return false;
  std::size_t end = text.find('\n', *pos);
  if (end == std::string_view::npos) end = text.size();
  *line = text.substr(*pos, end - *pos);
  *pos = end + 1;
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return true;
}

std::string limit_notice(const Profile& p) {
  std::string out = p.runtime_note.empty() ? "" : p.runtime_note + "\n";
  if (p.health.signal_lost_at >= 0)
    out += printf_string("Sampling stopped %.3f s into the run: the program replaced or ignored the handler of %s, "
                         "the profiler's timer signal (choose another with the signal option).\n",
                         p.health.signal_lost_at, p.health.signal_name.c_str());
  if (!p.health.limit_reached) return out;
  return out + "Collection stopped at max_samples after " + std::to_string(p.health.samples_taken) +
         " samples: later time is not in this profile.\n";
}

bool parse_u64(std::string_view field, std::uint64_t* out) {
  if (field.empty()) return false;
  for (char c : field)
    if (c < '0' || c > '9') return false;
  auto r = std::from_chars(field.data(), field.data() + field.size(), *out);
  return r.ec == std::errc() && r.ptr == field.data() + field.size();
}

}  // namespace scriptprof
