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
  return fold_hidden(p, [&](FunctionId f) {
    return named_in(p, f, o.hidden) || in_package(p, f, o.hidden_packages);
  });
}

// What the numbers mean: seconds of processor (or elapsed) time, Kbytes allocated (FORMATS.md
// 3.1 space variant), or garbage collections (the gc profile: a sample after each, no time).
struct Units {
  bool time;               // a time profile (the call graph's first line is about time)
  double scale;            // one unit of sample weight in seconds, Kbytes or collections
  const char* word;        // "Time" / "Mem." / "GCs "
  const char* plural;      // "Times" / "Mem.s" / "GCs": what is suppressed
  const char* amount;      // "secs" / "Kbyte" / "GCs"
  const char* per_call;    // "ms/call" / "by/call" / "GC/call"
  double per_call_scale;   // seconds -> ms, Kbytes -> bytes, collections as they are
  const char* value_fmt;   // seconds keep a decimal, Kbytes and collections print whole
  const char* amount_fmt;  // the call graph's amounts
};

Units units_of(const Profile& p) {
  if (p.clock == ClockKind::Alloc)
    return {false, 1.0 / 1024.0, "Mem.", "Mem.s", "Kbyte", "by/call", 1024.0, "%6.0f", "%8.0f"};
  if (p.clock == ClockKind::Gc) return {false, 1.0, "GCs ", "GCs", "GCs", "GC/call", 1.0, "%6.0f", "%8.0f"};
  return {true, static_cast<double>(p.period_ns) / 1e9, "Time", "Times", "secs", "ms/call", 1000.0, "%6.1f", "%8.1f"};
}

std::string sample_line(const Profile& p, const Units& u) {
  const double x = static_cast<double>(p.sample_weight()) * u.scale;
  if (p.clock == ClockKind::Alloc)
    return printf_string("Sample represents %.1f Kbytes of space allocated (out of a total of %.1f)\n", x, x);
  if (p.clock == ClockKind::Gc)
    return printf_string("Sample represents %.0f garbage collections (out of a total of %.0f)\n", x, x);
  return printf_string("Sample represents %.1f seconds of %s time (out of a total of %.1f)\n", x,
                p.clock == ClockKind::Wall ? "elapsed" : "processor", x);
}

}  // namespace

std::string allegro_flat_report(const Profile& original, const AllegroOptions& o) {
  const HiddenFolding folded = analysed(original, o);
  const Profile& p = folded.profile;
  const Units u = units_of(p);
  const double n = static_cast<double>(p.sample_weight());
  std::string out = sample_line(p, u);
  out += printf_string("%s below %.1f%% will be suppressed.\n\n", u.plural, o.significance_threshold * 100);
  out += "    %     %   self  total             self   total  Function\n";
  out += printf_string(" %s  Cum. %6s %6s    calls %7s %7s  name\n", u.word, u.amount, u.amount, u.per_call, u.per_call);
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
    double self_v = static_cast<double>(c.self) * u.scale, total_v = static_cast<double>(c.cumulative) * u.scale;
    std::string calls, self_per, total_per;
    if (c.calls && *c.calls > 0) {
      calls = std::to_string(*c.calls);
      self_per = printf_string("%.0f", u.per_call_scale * self_v / static_cast<double>(*c.calls));
      total_per = printf_string("%.0f", u.per_call_scale * total_v / static_cast<double>(*c.calls));
    }
    out += printf_string("%5.1f %5.1f ", pct, cum) + printf_string(u.value_fmt, self_v) + " " +
           printf_string(u.value_fmt, total_v) +
           printf_string(" %8s %7s %7s  ", calls.c_str(), self_per.c_str(), total_per.c_str()) +
           allegro_name(p, f, &folded.called_hidden) + "\n";
  }
  return visible_text(out);
}

std::string allegro_call_graph(const Profile& original, const AllegroOptions& o) {
  const HiddenFolding folded = analysed(original, o);
  const Profile& p = folded.profile;
  const Units u = units_of(p);
  const double n = static_cast<double>(p.sample_weight());
  // The space variant drops the first line and speaks of mem.s (FORMATS.md 3.2).
  std::string out = u.time ? "Time profile of sampled pc values by function, children, and parents.\n" : "";
  out += printf_string("Total %s below %.1f%% will be suppressed.\n", p.clock == ClockKind::Gc ? "GCs" : "times",
                       o.significance_threshold * 100);
  out += printf_string("Parent and child %s less %.1f%% of the node will be suppressed.\n",
                       u.time ? "times" : p.clock == ClockKind::Gc ? "GCs" : "mem.s",
                       o.fractional_significance_threshold * 100);
  out += sample_line(p, u);
  out += printf_string("\n     %%      %%                    Parent\n  self  total    total   local   Function\n"
                       "  %s   %s    %5s       %%     Child\n\n", u.word, u.word, u.amount);
  const char* amount_fmt = u.amount_fmt;

  // Per function: distinct callers and callees per sample, and whether F recurred there.
  struct Link { std::uint64_t count = 0; bool recursive = false; };
  std::map<FunctionId, std::map<FunctionId, Link>> parents, children;
  std::set<std::pair<FunctionId, FunctionId>> ups, downs;
  std::map<FunctionId, int> times;
  for_each_sample_path(p, [&](std::uint32_t, NodeId, const CallTreeNode& nd, const std::vector<FunctionId>& stack) {
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
        s += printf_string("%6s %6s ", "", "") + printf_string(amount_fmt, static_cast<double>(link.count) * u.scale) +
             printf_string(" %6.1f%c     ", local, link.recursive ? 'r' : ' ') +
             (other == kNoFunction ? std::string("...") : allegro_name(p, other, &folded.called_hidden)) + "\n";
      }
      return s;
    };
    out += lines(parents[f], false);
    out += printf_string("%6.1f %6.1f ", 100.0 * static_cast<double>(c.self) / n, 100.0 * incl / n) +
           printf_string(amount_fmt, incl * u.scale) +
           printf_string(" %6.1f    ", 100.0 * static_cast<double>(c.self) / incl) +
           allegro_name(p, f, &folded.called_hidden) + "\n";
    out += lines(children[f], true);
    out += dashes + "\n";
  }
  return visible_text(out);
}

std::string allegro_call_counts(const Profile& p) {
  if (!p.calls_counted()) return "Calls were not counted (profile with count_calls or a count_list).\n";
  std::vector<FunctionId> counted;
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.counts(f).calls) counted.push_back(f);
  std::sort(counted.begin(), counted.end(), [&](FunctionId a, FunctionId b) {
    if (*p.counts(a).calls != *p.counts(b).calls) return *p.counts(a).calls > *p.counts(b).calls;
    return p.functions.label(a) < p.functions.label(b);
  });
  std::string out;
  for (FunctionId f : counted)
    out += std::to_string(*p.counts(f).calls) + " #<Function " + one_line(p.functions.label(f)) + ">\n";
  return visible_text(out);
}

}  // namespace scriptprof
