#include "scriptprof/allegro_report.hpp"

#include "scriptprof/hidden_functions.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "text_util.hpp"

namespace scriptprof {
namespace {

// Lua functions print bare, C functions as "strings", as Allegro prints runtime-system code;
// a function that hidden functions were folded into is prefixed with "... ".
std::string allegro_name(const Profile& p, FunctionId f, const std::vector<bool>* called_hidden = nullptr) {
  const FunctionInfo& info = p.functions.info(f);
  std::string s = one_line(info.kind == FunctionKind::Native ? "\"" + info.name + "\"" : p.functions.label(f));
  if (called_hidden && (*called_hidden)[f]) s = "... " + s;
  return s;
}

// The profile the reports analyse: hidden functions folded away first (FORMATS.md 3.3).
HiddenFolding analysed(const Profile& p, const AllegroOptions& o) {
  return fold_hidden(p, [&](FunctionId f) { return named_in(p, f, o.hidden); });
}

std::string sample_line(const Profile& p) {
  const double period = static_cast<double>(p.period_ns) / 1e9;
  const double x = static_cast<double>(p.sample_weight()) * period;
  return printf_string("Sample represents %.1f seconds of %s time (out of a total of %.1f)\n", x,
                p.clock == ClockKind::Wall ? "elapsed" : "processor", x);
}

}  // namespace

std::string allegro_flat_report(const Profile& original, const AllegroOptions& o) {
  const HiddenFolding folded = analysed(original, o);
  const Profile& p = folded.profile;
  const double period = static_cast<double>(p.period_ns) / 1e9;
  const double n = static_cast<double>(p.sample_weight());
  std::string out = sample_line(p);
  out += printf_string("Times below %.1f%% will be suppressed.\n\n", o.significance_threshold * 100);
  out += "    %     %   self  total             self   total  Function\n";
  out += " Time  Cum.   secs   secs    calls ms/call ms/call  name\n";
  std::vector<FunctionId> rows;
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (n > 0 && 100.0 * static_cast<double>(p.counts(f).self) / n >= o.significance_threshold * 100 &&
        p.counts(f).self > 0)
      rows.push_back(f);
  std::sort(rows.begin(), rows.end(), [&](FunctionId a, FunctionId b) {
    const FunctionCounts &x = p.counts(a), &y = p.counts(b);
    if (x.self != y.self) return x.self > y.self;
    if (x.cumulative != y.cumulative) return x.cumulative > y.cumulative;
    return p.functions.label(a) < p.functions.label(b);
  });
  double cum = 0;
  for (FunctionId f : rows) {
    const FunctionCounts& c = p.counts(f);
    double pct = 100.0 * static_cast<double>(c.self) / n;
    cum += pct;
    double self_s = static_cast<double>(c.self) * period, total_s = static_cast<double>(c.cumulative) * period;
    std::string calls, self_ms, total_ms;
    if (c.calls && *c.calls > 0) {
      calls = std::to_string(*c.calls);
      self_ms = printf_string("%.0f", 1000.0 * self_s / static_cast<double>(*c.calls));
      total_ms = printf_string("%.0f", 1000.0 * total_s / static_cast<double>(*c.calls));
    }
    out += printf_string("%5.1f %5.1f %6.1f %6.1f %8s %7s %7s  ", pct, cum, self_s, total_s, calls.c_str(), self_ms.c_str(),
                  total_ms.c_str()) + allegro_name(p, f, &folded.called_hidden) + "\n";
  }
  return out;
}

std::string allegro_call_graph(const Profile& original, const AllegroOptions& o) {
  const HiddenFolding folded = analysed(original, o);
  const Profile& p = folded.profile;
  const double period = static_cast<double>(p.period_ns) / 1e9;
  const double n = static_cast<double>(p.sample_weight());
  std::string out = "Time profile of sampled pc values by function, children, and parents.\n";
  out += printf_string("Total times below %.1f%% will be suppressed.\n", o.significance_threshold * 100);
  out += printf_string("Parent and child times less %.1f%% of the node will be suppressed.\n",
                o.fractional_significance_threshold * 100);
  out += sample_line(p);
  out += "\n     %      %                    Parent\n  self  total    total   local   Function\n"
         "  Time   Time     secs       %     Child\n\n";

  // Per function: distinct callers and callees per sample, and whether F recurred there.
  struct Link { std::uint64_t count = 0; bool recursive = false; };
  std::map<FunctionId, std::map<FunctionId, Link>> parents, children;
  std::set<std::pair<FunctionId, FunctionId>> ups, downs;
  std::map<FunctionId, int> times;
  for_each_sample_path(p, [&](std::uint32_t, const CallTreeNode& nd, const std::vector<FunctionId>& stack) {
    if (stack.empty()) return;
    ups.clear();
    downs.clear();
    times.clear();
    for (std::size_t j = 0; j < stack.size(); ++j) {
      ++times[stack[j]];
      if (j > 0) ups.insert({stack[j], stack[j - 1]});
      if (j + 1 < stack.size()) downs.insert({stack[j], stack[j + 1]});
    }
    for (const auto& [f, caller] : ups) {
      Link& l = parents[f][caller];
      l.count += nd.self;
      l.recursive = l.recursive || times[f] > 1;
    }
    for (const auto& [f, callee] : downs) {
      Link& l = children[f][callee];
      l.count += nd.self;
      l.recursive = l.recursive || times[f] > 1;
    }
  });
  std::vector<FunctionId> entries;
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (n > 0 && p.counts(f).cumulative > 0 &&
        100.0 * static_cast<double>(p.counts(f).cumulative) / n >= o.significance_threshold * 100)
      entries.push_back(f);
  std::sort(entries.begin(), entries.end(), [&](FunctionId a, FunctionId b) {
    if (p.counts(a).cumulative != p.counts(b).cumulative) return p.counts(a).cumulative > p.counts(b).cumulative;
    return p.functions.label(a) < p.functions.label(b);
  });
  const std::string dashes(53, '-');
  for (FunctionId f : entries) {
    const FunctionCounts& c = p.counts(f);
    const double incl = static_cast<double>(c.cumulative);
    auto lines = [&](const std::map<FunctionId, Link>& links, bool with_hidden) {
      std::vector<std::pair<FunctionId, Link>> v(links.begin(), links.end());
      // Samples whose callees of F were all hidden: a child line named just "...".
      auto h = folded.hidden_leaf.find(f);
      if (with_hidden && h != folded.hidden_leaf.end()) v.push_back({kNoFunction, Link{h->second, false}});
      std::sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
        if (a.second.count != b.second.count) return a.second.count > b.second.count;
        if (a.first == kNoFunction || b.first == kNoFunction) return b.first == kNoFunction;
        return p.functions.label(a.first) < p.functions.label(b.first);
      });
      std::string s;
      for (const auto& [other, link] : v) {
        double local = 100.0 * static_cast<double>(link.count) / incl;
        if (local < o.fractional_significance_threshold * 100) continue;
        s += printf_string("%6s %6s %8.1f %6.1f%c     ", "", "", static_cast<double>(link.count) * period, local,
                    link.recursive ? 'r' : ' ') +
             (other == kNoFunction ? std::string("...") : allegro_name(p, other, &folded.called_hidden)) + "\n";
      }
      return s;
    };
    out += lines(parents[f], false);
    out += printf_string("%6.1f %6.1f %8.1f %6.1f    ", 100.0 * static_cast<double>(c.self) / n, 100.0 * incl / n,
                  incl * period, 100.0 * static_cast<double>(c.self) / incl) + allegro_name(p, f, &folded.called_hidden) + "\n";
    out += lines(children[f], true);
    out += dashes + "\n";
  }
  return out;
}

}  // namespace scriptprof
