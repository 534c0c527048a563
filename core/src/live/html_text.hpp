// Text put into the profile server's HTML pages, escaped: names reach a page as text, never
// as markup. (Private to core/src/live.)
#pragma once
#include <string>

namespace scriptprof {

inline std::string html_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace scriptprof
