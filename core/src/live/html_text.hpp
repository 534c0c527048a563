// Text put into the profile server's HTML pages: names escaped (they reach a page as text,
// never as markup), and numbers. (Private to core/src/live.)
#pragma once
#include <cstdio>
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

// A rate or a count as a page shows it: 19, 0.5, 1e+03 ("%g").
inline std::string page_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace scriptprof
