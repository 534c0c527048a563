#include "scriptprof/annotated_source.hpp"

#include <algorithm>

#include "text_util.hpp"

namespace scriptprof {

std::string annotated_source(const Profile& p, FunctionId f, const std::vector<std::string>& source) {
  const FunctionInfo& info = p.functions.info(f);
  const FunctionCounts& c = p.counts(f);
  const double n = static_cast<double>(p.sample_weight());
  auto pct = [&](std::uint64_t w) { return n > 0 ? 100.0 * static_cast<double>(w) / n : 0.0; };
  const std::map<int, LineCounts> lines = p.line_counts(f);
  std::string out = printf_string("%s: %.2f%% of the %s in the function, %.2f%% on its own lines\n",
                                  one_line(p.functions.label(f)).c_str(), pct(c.cumulative),
                                  p.clock == ClockKind::Alloc ? "bytes allocated"
                                  : p.clock == ClockKind::Gc  ? "garbage collections"
                                                              : "samples",
                                  pct(c.self));
  std::uint64_t line_self = 0;
  for (const auto& entry : lines) line_self += entry.second.self;
  if (c.self > 0 && line_self == 0)
    out += "(its own time has no lines: LuaJIT samples the running line with the lines option, --lines)\n";
  out += " self %  total %   line  source\n";
  auto row = [&](int line, const std::string& text) {
    auto it = lines.find(line);
    if (it == lines.end())
      out += printf_string("%7s  %7s  %5d  ", "", "", line);
    else
      out += printf_string("%7.2f  %7.2f  %5d  ", pct(it->second.self), pct(it->second.cumulative), line);
    out += one_line(text) + "\n";
  };
  if (source.empty()) {
    for (const auto& entry : lines) row(entry.first, "");
    return visible_text(out);
  }
  // A main chunk spans the file; a function its definition (and any sampled line, in case the
  // file changed since the run).
  int first = info.kind == FunctionKind::Main || info.line <= 0 ? 1 : info.line;
  int last = info.kind == FunctionKind::Main || info.last_line <= 0 ? static_cast<int>(source.size()) : info.last_line;
  if (!lines.empty()) {
    first = std::min(first, lines.begin()->first);
    last = std::max(last, lines.rbegin()->first);
  }
  for (int line = first; line <= last; ++line)
    row(line, line >= 1 && static_cast<std::size_t>(line) <= source.size() ? source[static_cast<std::size_t>(line) - 1] : "");
  return visible_text(out);
}

}  // namespace scriptprof
