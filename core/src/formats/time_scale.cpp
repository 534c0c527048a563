#include "time_scale.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "scriptprof/profile.hpp"
#include "text_util.hpp"

namespace scriptprof {

namespace {

// The shortest text that reads back as exactly the same double.
std::string shortest(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

bool parse_seconds(const std::string& s, double* out) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end != '\0' || !(v >= 0) || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

std::string time_scale_text(const Profile& p, bool in_time_order) {
  const char* clock = p.clock == ClockKind::Cpu    ? "cpu"
                      : p.clock == ClockKind::Wall ? "wall"
                      : p.clock == ClockKind::Gc   ? "gc"
                                                   : "alloc";
  return "scriptprof period_ns=" + std::to_string(p.period_ns) + " samples=" + std::to_string(p.sample_weight()) +
         " total_seconds=" + shortest(p.total_seconds) + " gc_seconds=" + shortest(p.gc_seconds) +
         (p.gc_measured ? "" : " gc=explicit") + " clock=" + clock + (in_time_order ? " order=time" : "");
}

std::string no_timeline_message(const char* needs) {
  return std::string(needs) +
         " the samples in time order: profile with full stacks (--full-stacks, full_stacks=true), or convert the "
         "speedscope or Sampler file of such a run (LispWorks trees, folded files and pprof keep no time order)";
}

std::string without_order_note(const std::string& name) {
  const std::string_view note(kSpeedscopeNoTimeOrder);
  if (name.size() >= note.size() && std::string_view(name).substr(name.size() - note.size()) == note)
    return name.substr(0, name.size() - note.size());
  return name;
}

double written_sample_ns(double total_seconds, std::uint64_t samples, std::uint64_t period_ns) {
  const double measured = samples > 0 && total_seconds > 0 ? total_seconds * 1e9 / static_cast<double>(samples) : 0;
  return measured >= 1 ? measured : static_cast<double>(period_ns);
}

TimeScale parse_time_scale(std::string_view s) {
  TimeScale t;
  constexpr std::string_view kTag = "scriptprof ";
  if (s.substr(0, kTag.size()) != kTag) return t;
  t.found = true;
  std::size_t pos = kTag.size();
  while (pos < s.size()) {
    std::size_t end = s.find(' ', pos);
    if (end == std::string_view::npos) end = s.size();
    std::string_view item = s.substr(pos, end - pos);
    pos = end + 1;
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = item.substr(0, eq);
    std::string value(item.substr(eq + 1));
    std::uint64_t v = 0;
    if (key == "period_ns" && parse_u64(value, &v) && v > 0) t.period_ns = v;
    else if (key == "samples" && parse_u64(value, &v)) t.samples = v;
    else if (key == "total_seconds") parse_seconds(value, &t.total_seconds);
    else if (key == "gc_seconds") parse_seconds(value, &t.gc_seconds);
    else if (key == "order") t.time_order = value == "time";
    else if (key == "gc") t.gc_measured = value != "explicit";
    else if (key == "clock")
      t.clock = value == "cpu" ? static_cast<int>(ClockKind::Cpu)
              : value == "wall" ? static_cast<int>(ClockKind::Wall)
              : value == "alloc" ? static_cast<int>(ClockKind::Alloc)
              : value == "gc" ? static_cast<int>(ClockKind::Gc) : -1;
  }
  return t;
}

std::string apply_time_scale(const TimeScale& scale, Profile* p, std::uint64_t fallback_period_ns) {
  const double n = static_cast<double>(p->sample_weight());
  if (!scale.found || scale.period_ns == 0) {
    p->period_ns = fallback_period_ns;
    p->total_seconds = n * static_cast<double>(fallback_period_ns) * 1e-9;
    return "the file does not say how long a sample is: assuming " +
           std::to_string(fallback_period_ns / 1000) + " us a sample";
  }
  p->period_ns = scale.period_ns;
  if (scale.clock >= 0) p->clock = static_cast<ClockKind>(scale.clock);
  // Files written before "samples=" was added measured their total over all their weights.
  bool whole = scale.total_seconds >= 0 && (scale.samples == 0 || scale.samples == p->sample_weight());
  double per_sample = static_cast<double>(scale.period_ns) * 1e-9;
  if (scale.total_seconds >= 0 && scale.samples > 0)
    per_sample = scale.total_seconds / static_cast<double>(scale.samples);
  p->total_seconds = whole ? scale.total_seconds : n * per_sample;
  if (whole && scale.gc_seconds >= 0) p->gc_seconds = scale.gc_seconds;  // a cut file's share is unknown
  p->gc_measured = scale.gc_measured;
  return "";
}

}  // namespace scriptprof
