#include "scriptprof/gprof_report.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "text_util.hpp"

namespace scriptprof {
namespace {

// Per-function numbers as gprof defines them (FORMATS.md 2.1, 2.3).
struct Row {
  FunctionId f;
  double self = 0, child = 0;           // seconds
  std::uint64_t nrcalls = 0, selfcalls = 0;
  bool counted = false;
};

Row row_of(const Profile& p, FunctionId f) {
  const double period = static_cast<double>(p.period_ns) / 1e9;
  const FunctionCounts& c = p.counts(f);
  Row r;
  r.f = f;
  r.self = static_cast<double>(c.self) * period;
  r.child = static_cast<double>(c.cumulative - c.self) * period;
  r.counted = c.calls.has_value();
  r.selfcalls = c.self_calls;
  r.nrcalls = c.calls.value_or(0) - std::min(c.calls.value_or(0), c.self_calls);
  return r;
}

// Arc statistics from the samples: arc(P,C) once per sample, and arcself(P,C) when C's run
// reaches the leaf. One walk of the call tree, not one per sample path (a deep stack sampled at
// every depth would cost the square of its depth): a node adds its whole weight to arc(P,C)
// when (P,C) is not already on the path above it, as cumulative time counts a function once.
struct ArcStats {
  std::map<std::pair<FunctionId, FunctionId>, std::uint64_t> arc, arcself;
};

ArcStats arc_stats(const Profile& p) {
  ArcStats a;
  std::map<std::pair<FunctionId, FunctionId>, std::uint32_t> on_path;
  std::vector<FunctionId> run_caller;  // by depth: the frame before the run of equal frames ending there
  struct Step { NodeId node; bool leaving; };
  std::vector<Step> todo;
  for (const auto& [thread, root] : p.tree.roots()) {
    todo.push_back({root, false});
    while (!todo.empty()) {
      const Step step = todo.back();
      todo.pop_back();
      const CallTreeNode& n = p.tree.node(step.node);
      const CallTreeNode* parent = n.parent == kNoNode ? nullptr : &p.tree.node(n.parent);
      const bool arc = parent && parent->function != kNoFunction && n.function != kNoFunction;
      const std::pair<FunctionId, FunctionId> pc{arc ? parent->function : kNoFunction, n.function};
      if (step.leaving) {
        if (arc && --on_path[pc] == 0) on_path.erase(pc);
        continue;
      }
      if (arc && on_path[pc]++ == 0) a.arc[pc] += n.count;
      if (run_caller.size() <= n.depth) run_caller.resize(n.depth + 1, kNoFunction);
      run_caller[n.depth] = !parent ? kNoFunction
                          : parent->function == n.function ? run_caller[n.depth - 1] : parent->function;
      if (n.self > 0 && n.function != kNoFunction && run_caller[n.depth] != kNoFunction)
        a.arcself[{run_caller[n.depth], n.function}] += n.self;
      todo.push_back({step.node, true});
      for (NodeId c = n.first_child; c != kNoNode; c = p.tree.node(c).next_sibling) todo.push_back({c, false});
    }
  }
  return a;
}

bool listed(const Profile& p, FunctionId f) {
  return p.counts(f).cumulative > 0 || p.counts(f).calls.value_or(0) > 0;
}

}  // namespace

std::string gprof_flat_report(const Profile& p) {
  const double period = static_cast<double>(p.period_ns) / 1e9;
  std::vector<Row> rows;
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    Row r = row_of(p, f);
    if (r.nrcalls == 0 && p.counts(f).self == 0) continue;  // as gprof without -z
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.nrcalls != b.nrcalls) return a.nrcalls > b.nrcalls;
    return p.functions.label(a.f) < p.functions.label(b.f);
  });
  // The per-call unit: the first scale that puts the largest per-call time in [1, 1000).
  static const std::pair<char, double> kScales[] = {{'T', 1e-12}, {'G', 1e-9}, {'M', 1e-6}, {'K', 1e-3},
                                                    {' ', 1},     {'m', 1e3},  {'u', 1e6},  {'n', 1e9},
                                                    {'p', 1e12},  {'f', 1e15}, {'a', 1e18}};
  double largest = 0;
  for (const Row& r : rows)
    if (r.nrcalls) largest = std::max(largest, (r.self + r.child) / static_cast<double>(r.nrcalls));
  std::pair<char, double> unit = kScales[0];
  for (const auto& s : kScales)
    if (largest * s.second >= 1 && largest * s.second < 1000) {
      unit = s;
      break;
    }
  const std::string u = std::string(1, unit.first) + "s/call";
  const double total = static_cast<double>(p.sample_weight() - p.empty_weight()) * period;
  std::string out = "Flat profile:\n";
  out += printf_string("\nEach sample counts as %g seconds.\n", period);
  if (total <= 0) out += " no time accumulated\n\n";
  out += printf_string("%5.5s %10.10s %8.8s %8.8s %8.8s %8.8s  %-8.8s\n", "%  ", "cumulative", "self  ", "", "self  ", "total ", "");
  out += printf_string("%5.5s %9.9s  %8.8s %8.8s %8.8s %8.8s  %-8.8s\n", "time", "seconds", "seconds", "calls", u.c_str(), u.c_str(), "name");
  double running = 0;
  for (const Row& r : rows) {
    running += r.self;
    out += printf_string("%6.2f %9.2f %8.2f", total > 0 ? 100.0 * r.self / total : 0.0, running, r.self);
    if (r.nrcalls)
      out += printf_string(" %8lu %8.2f %8.2f  ", static_cast<unsigned long>(r.nrcalls),
                    unit.second * r.self / static_cast<double>(r.nrcalls),
                    unit.second * (r.self + r.child) / static_cast<double>(r.nrcalls));
    else
      out += printf_string(" %8.8s %8.8s %8.8s  ", "", "", "");
    out += p.functions.label(r.f) + "\n";
  }
  return visible_text(out);
}

std::string gprof_call_graph(const Profile& p) {
  const double period = static_cast<double>(p.period_ns) / 1e9;
  const bool counted = p.calls_counted();
  const std::uint64_t ticks = p.sample_weight() - p.empty_weight();
  const ArcStats arcs = arc_stats(p);

  // Index numbers by total time, then names not starting with '_', then calls, then name.
  std::vector<Row> rows;
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (listed(p, f)) rows.push_back(row_of(p, f));
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (a.self + a.child != b.self + b.child) return a.self + a.child > b.self + b.child;
    const std::string &la = p.functions.label(a.f), &lb = p.functions.label(b.f);
    bool ua = !la.empty() && la[0] == '_', ub = !lb.empty() && lb[0] == '_';
    if (ua != ub) return !ua;
    if (a.nrcalls != b.nrcalls) return a.nrcalls > b.nrcalls;
    return la < lb;
  });
  std::map<FunctionId, std::size_t> index;
  std::map<FunctionId, const Row*> row;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    index[rows[i].f] = i + 1;
    row[rows[i].f] = &rows[i];
  }
  auto name = [&](FunctionId f) { return p.functions.label(f) + " [" + std::to_string(index[f]) + "]"; };
  // Calls through an arc: exact when counted; without counts the column stays blank, as
  // gprof leaves arcs it has no count for (samples are not calls).
  auto arc_count = [&](FunctionId from, FunctionId to) -> std::uint64_t {
    return counted ? p.arc_calls(from, to) : 0;
  };
  auto into = [&](FunctionId to) -> std::uint64_t { return row[to]->nrcalls; };  // the m of n/m
  auto called = [&](std::uint64_t n, std::uint64_t m) {
    return counted ? printf_string("%7lu/%-7lu", static_cast<unsigned long>(n), static_cast<unsigned long>(m))
                   : printf_string("%7.7s %-7.7s", "", "");
  };
  struct Arc { FunctionId other; double self, child; std::uint64_t count; };
  auto arc_line = [&](FunctionId from, FunctionId to, FunctionId other) {
    auto s = arcs.arcself.find({from, to});
    auto a = arcs.arc.find({from, to});
    std::uint64_t self_n = s == arcs.arcself.end() ? 0 : s->second, all_n = a == arcs.arc.end() ? 0 : a->second;
    return Arc{other, static_cast<double>(self_n) * period, static_cast<double>(all_n - self_n) * period, arc_count(from, to)};
  };

  // Each function's callers and callees (sampled arcs, and counted ones), between listed
  // functions: found from the arcs, not by trying every pair of functions.
  struct Neighbours { std::vector<FunctionId> parents, children; };
  std::map<FunctionId, Neighbours> neighbours;
  std::set<std::pair<FunctionId, FunctionId>> linked;
  auto link = [&](FunctionId from, FunctionId to) {
    if (from == to || !row.count(from) || !row.count(to) || !linked.insert({from, to}).second) return;
    neighbours[to].parents.push_back(from);
    neighbours[from].children.push_back(to);
  };
  for (const auto& entry : arcs.arc) link(entry.first.first, entry.first.second);
  if (counted)
    for (const Row& r : rows)
      for (const auto& [caller, n] : p.callers(r.f))
        if (n > 0 && caller != kNoFunction) link(caller, r.f);
  auto by_index = [&](FunctionId a, FunctionId b) { return index[a] < index[b]; };  // rows' order, as before
  for (auto& [f, n] : neighbours) {
    std::sort(n.parents.begin(), n.parents.end(), by_index);
    std::sort(n.children.begin(), n.children.end(), by_index);
  }

  std::string out = "\t\t\tCall graph\n\n";
  out += "\ngranularity: each sample hit covers 4 byte(s)";
  out += ticks > 0 ? printf_string(" for %.2f%% of %.2f seconds\n\n", 100.0 / static_cast<double>(ticks),
                            static_cast<double>(ticks) * period)
                   : std::string(" no time propagated\n\n");
  out += "index % time    self  children    called     name\n";
  const std::string dashes(47, '-');
  for (const Row& r : rows) {
    const FunctionId f = r.f;
    std::vector<Arc> parents, children;
    for (FunctionId o : neighbours[f].parents) parents.push_back(arc_line(o, f, o));
    for (FunctionId o : neighbours[f].children) children.push_back(arc_line(f, o, o));
    const std::uint64_t self_arc = counted ? r.selfcalls : 0;  // recursive calls: known only when counted
    std::sort(parents.begin(), parents.end(), [](const Arc& a, const Arc& b) {
      if (a.self + a.child != b.self + b.child) return a.self + a.child < b.self + b.child;
      return a.count < b.count;
    });
    std::sort(children.begin(), children.end(), [](const Arc& a, const Arc& b) {
      if (a.self + a.child != b.self + b.child) return a.self + a.child > b.self + b.child;
      return a.count > b.count;
    });
    auto self_arc_line = [&] {
      return printf_string("%6.6s %5.5s %7.7s %7.7s %7lu %7.7s     ", "", "", "", "", static_cast<unsigned long>(self_arc), "") +
             name(f) + "\n";
    };
    if (parents.empty() && self_arc == 0)
      out += printf_string("%6.6s %5.5s %7.7s %7.7s %7.7s %7.7s     <spontaneous>\n", "", "", "", "", "", "");
    if (self_arc) out += self_arc_line();
    for (const Arc& a : parents)
      out += printf_string("%6.6s %5.5s %7.2f %7.2f ", "", "", a.self, a.child) + called(a.count, into(f)) + "     " +
             name(a.other) + "\n";
    std::string idx = "[" + std::to_string(index[f]) + "]";
    out += printf_string("%-6.6s %5.1f %7.2f %7.2f", idx.c_str(), ticks ? 100.0 * (r.self + r.child) / (static_cast<double>(ticks) * period) : 0.0,
                  r.self, r.child);
    if (counted && r.nrcalls + r.selfcalls != 0) {
      out += printf_string(" %7lu", static_cast<unsigned long>(r.nrcalls));
      out += r.selfcalls ? printf_string("+%-7lu ", static_cast<unsigned long>(r.selfcalls)) : printf_string(" %7.7s ", "");
    } else {
      out += printf_string(" %7.7s %7.7s ", "", "");
    }
    out += name(f) + "\n";
    for (const Arc& a : children)
      out += printf_string("%6.6s %5.5s %7.2f %7.2f ", "", "", a.self, a.child) + called(a.count, into(a.other)) +
             "     " + name(a.other) + "\n";
    if (self_arc) out += self_arc_line();
    out += dashes + "\n";
  }
  return visible_text(out);
}

}  // namespace scriptprof
