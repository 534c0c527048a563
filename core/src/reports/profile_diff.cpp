#include "scriptprof/profile_diff.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <map>
#include <string_view>

#include "scriptprof/call_stats.hpp"
#include "scriptprof/function_matching.hpp"
#include "scriptprof/folded_stacks.hpp"
#include "scriptprof/guile_number_format.hpp"
#include "text_util.hpp"

namespace scriptprof {

std::vector<FunctionChange> diff_functions(const Profile& base, const Profile& now) {
  using Presence = FunctionChange::Presence;
  const FunctionMatches m = match_functions(base, now);
  std::vector<FunctionChange> out;
  std::vector<std::size_t> row_of_now(now.functions.size(), SIZE_MAX);
  auto add = [&](const Profile& p, bool is_new) {
    const double n = static_cast<double>(std::max<std::uint64_t>(p.sample_weight(), 1));
    for (const CallStats& s : compute_call_stats(p)) {
      const FunctionId f = s.function;
      std::size_t row = SIZE_MAX;
      if (is_new) row = row_of_now[f];
      else if (m.now_of_base[f] != kNoFunction) row = row_of_now[m.now_of_base[f]];
      if (row == SIZE_MAX) {
        row = out.size();
        out.push_back({p.functions.label(f)});
        out.back().presence = is_new ? (m.now_ambiguous[f] ? Presence::Ambiguous : Presence::NewOnly)
                              : m.base_ambiguous[f] ? Presence::Ambiguous
                              : m.now_of_base[f] == kNoFunction ? Presence::BaseOnly : Presence::Both;
        if (is_new) row_of_now[f] = row;
        else if (m.now_of_base[f] != kNoFunction) row_of_now[m.now_of_base[f]] = row;
      }
      FunctionChange& c = out[row];
      if (is_new) c.label = p.functions.label(f);  // the new run's line
      (is_new ? c.new_self : c.base_self) += s.self_secs;
      (is_new ? c.new_cumulative : c.base_cumulative) += s.cum_secs;
      (is_new ? c.new_self_pct : c.base_self_pct) += 100.0 * static_cast<double>(s.self_samples) / n;
    }
  };
  add(base, false);
  add(now, true);
  std::stable_sort(out.begin(), out.end(), [](const FunctionChange& a, const FunctionChange& b) {
    double sa = std::fabs(a.new_self - a.base_self), sb = std::fabs(b.new_self - b.base_self);
    if (sa != sb) return sa > sb;
    double ca = std::fabs(a.new_cumulative - a.base_cumulative), cb = std::fabs(b.new_cumulative - b.base_cumulative);
    if (ca != cb) return ca > cb;
    return std::fabs(a.new_self_pct - a.base_self_pct) > std::fabs(b.new_self_pct - b.base_self_pct);
  });
  return out;
}

namespace {

std::string signed_fixed(double x, int width, int decimals) {
  if (std::fabs(x) < 0.5 * std::pow(10.0, -decimals)) x = 0.0;  // no "-0.00"
  std::string s = printf_string("%+.*f", decimals, x);
  return std::string(s.size() < static_cast<std::size_t>(width) ? width - s.size() : 0, ' ') + s;
}

std::string fixed(double x, int width, int decimals) { return guile_fixed(std::max(0.0, x), width, decimals); }

// A function the other run does not have, or that several of either run could be.
const char* presence_note(FunctionChange::Presence p) {
  switch (p) {
    case FunctionChange::Presence::BaseOnly: return "  [only in base]";
    case FunctionChange::Presence::NewOnly: return "  [only in new]";
    case FunctionChange::Presence::Ambiguous: return "  [ambiguous: not matched]";
    case FunctionChange::Presence::Both: break;
  }
  return "";
}

}  // namespace

std::string diff_report(const Profile& base, const Profile& now, std::size_t limit) {
  std::string out;
  auto totals = [](const char* which, const Profile& p) {
    return printf_string("%s: %llu samples, %.3f seconds%s\n", which,
                         static_cast<unsigned long long>(p.sample_weight()), p.total_seconds,
                         p.name.empty() ? "" : (" (" + p.name + ")").c_str());
  };
  out += totals("base", base) + totals("new ", now);
  if (base.total_seconds > 0)
    out += printf_string("total time %+.1f%%\n", 100.0 * (now.total_seconds - base.total_seconds) / base.total_seconds);
  out += "\n  self %               self seconds          cumulative seconds\n"
         "  base    new  change    base    new  change    base    new  change  function\n";
  std::vector<FunctionChange> changes = diff_functions(base, now);
  std::size_t shown = 0;
  for (const FunctionChange& c : changes) {
    if (limit && shown == limit) break;
    ++shown;
    out += fixed(c.base_self_pct, 6, 2) + " " + fixed(c.new_self_pct, 6, 2) + " " +
           signed_fixed(c.new_self_pct - c.base_self_pct, 7, 2) + " " + fixed(c.base_self, 7, 2) + " " +
           fixed(c.new_self, 6, 2) + " " + signed_fixed(c.new_self - c.base_self, 7, 2) + " " +
           fixed(c.base_cumulative, 7, 2) + " " + fixed(c.new_cumulative, 6, 2) + " " +
           signed_fixed(c.new_cumulative - c.base_cumulative, 7, 2) + "  " + c.label + presence_note(c.presence) + "\n";
  }
  if (shown < changes.size())
    out += printf_string("(%zu more functions changed less; --limit 0 lists all)\n", changes.size() - shown);
  return visible_text(out);
}

std::string diff_folded(const Profile& base, const Profile& now) {
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> stacks;  // sorted bytewise
  FoldedWriteOptions options;
  options.time_scale = false;
  auto add = [&](const Profile& p, bool is_new) {
    std::string text = write_folded(p, options);
    std::string_view rest(text);
    while (!rest.empty()) {
      std::size_t end = rest.find('\n');
      std::string_view line = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      std::size_t space = line.rfind(' ');
      if (space == std::string_view::npos) continue;
      std::uint64_t weight = std::strtoull(std::string(line.substr(space + 1)).c_str(), nullptr, 10);
      auto& w = stacks[std::string(line.substr(0, space))];
      (is_new ? w.second : w.first) += weight;
    }
  };
  add(base, false);
  add(now, true);
  std::string out;
  for (const auto& [stack, w] : stacks)
    out += stack + " " + std::to_string(w.first) + " " + std::to_string(w.second) + "\n";
  return out;
}

}  // namespace scriptprof
