#include "scriptprof/statprof_flat_report.hpp"

#include <algorithm>

#include "scriptprof/guile_number_format.hpp"

#include "statprof_footer.hpp"
#include "text_util.hpp"

namespace scriptprof {
namespace {

std::string right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::string report_label(const Profile& p, FunctionId f, LabelStyle style) {
  const FunctionInfo& info = p.functions.info(f);
  if (style == LabelStyle::Guile && info.kind == FunctionKind::Script && !info.file.empty())
    return one_line(info.file + ":" + std::to_string(info.line) + ":0:" + info.name);
  return one_line(p.functions.label(f));
}

// A space profile in the statprof layout: the columns are Kbytes allocated, not seconds, and the
// header and footer say so.
static std::string space_flat_report(const Profile& p, const FlatReportOptions& opt) {
  const bool counting = p.calls_counted();
  std::string out = limit_notice(p) + "%     cumulative   self             \n";
  out += counting ? "space    Kbytes     Kbytes   calls   procedure\n" : "space    Kbytes     Kbytes  procedure\n";
  for (const CallStats& s : compute_call_stats(p, opt.cumulative)) {
    out += guile_fixed(std::max(0.0, s.pct_time), 6, 2) + " " +
           guile_fixed(static_cast<double>(s.cum_samples) / 1024.0, 9, 2) + " " +
           guile_fixed(static_cast<double>(s.self_samples) / 1024.0, 9, 2);
    if (counting && s.calls) out += " " + right(std::to_string(*s.calls), 7) + "  ";
    else out += counting ? std::string(10, ' ') : "  ";
    out += report_label(p, s.function, opt.labels) + "\n";
  }
  out += "---\n";
  if (p.sample_count() > 0) out += "Sample count: " + std::to_string(p.sample_count()) + "\n";
  out += printf_string("Total allocated: %.2f Kbytes (sampled)\n", static_cast<double>(p.sample_weight()) / 1024.0);
  return out;
}

std::string statprof_flat_report(const Profile& p, const FlatReportOptions& opt) {
  // The profile's notes say why there may be none (the timer's signal taken by the program).
  if (p.sample_weight() == 0) return limit_notice(p) + "No samples recorded.\n";
  if (p.clock == ClockKind::Alloc) return visible_text(space_flat_report(p, opt));
  const bool counting = p.calls_counted();
  const bool guile2 = opt.layout == FlatLayout::Guile2;
  std::string out = limit_notice(p);
  if (guile2 && counting)
    out += "%     cumulative   self             self     total             \n"
           "time   seconds    seconds  calls    ms/call  ms/call       name\n";
  else if (guile2)
    out += "%     cumulative   self             \ntime   seconds     seconds      name\n";
  else
    out += counting ? "%     cumulative   self             \ntime   seconds    seconds   calls   procedure\n"
                    : "%     cumulative   self             \ntime   seconds     seconds  procedure\n";
  // A JIT runtime's column, before the names: the share of a function's self time that ran
  // compiled code.
  const bool jit = p.jit_shares && !guile2;
  if (jit) out.insert(out.size() - std::string("procedure\n").size(), " jit%  ");
  for (const CallStats& s : compute_call_stats(p, opt.cumulative)) {
    // Negative zero never reaches the page (FORMATS.md 1.9).
    out += guile_fixed(std::max(0.0, s.pct_time), 6, 2) + " " +
           guile_fixed(std::max(0.0, s.cum_secs), 9, 2) + " " +
           guile_fixed(std::max(0.0, s.self_secs), 9, 2);
    if (guile2 && counting) {
      std::uint64_t calls = s.calls.value_or(0);
      double self_ms = s.self_samples == 0 || calls == 0 ? 0.0 : 1000.0 * s.self_secs / static_cast<double>(calls);
      double total_ms = 1000.0 * s.cum_secs / static_cast<double>(std::max<std::uint64_t>(calls, 1));
      out += " " + right(std::to_string(calls), 7) + " " + guile_fixed(self_ms, 8, 2) + " " +
             guile_fixed(total_ms, 8, 2) + "  ";
    } else if (!counting || guile2)
      out += "  ";
    else if (s.calls)
      out += " " + right(std::to_string(*s.calls), 7) + "  ";
    else
      out += std::string(28, ' ');
    if (jit)
      out += s.self_samples && can_run_compiled(p.functions.info(s.function))
                 ? right(std::to_string(100 * p.counts(s.function).compiled / s.self_samples), 5) + "  "
                 : "    -  ";
    out += report_label(p, s.function, opt.labels) + "\n";
  }
  out += statprof_footer(p);
  return visible_text(out);
}

}  // namespace scriptprof
