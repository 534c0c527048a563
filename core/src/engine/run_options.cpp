#include "scriptprof/run_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstdlib>

namespace scriptprof {

namespace {

enum class Kind : std::uint8_t { Switch, Rate, Clock, Bytes, Heap, Bound, Signal };

struct Option {
  RunOptionSpec spec;
  Kind kind;
  bool RunSettings::*flag;  // Switch: the field it sets
};

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      {{"hz", "--hz", "N", "samples per second of the chosen clock (default 100, max 100000)"}, Kind::Rate, nullptr},
      {{"clock", "--clock", "cpu|wall", "time the program runs on a CPU (default) or elapsed time"}, Kind::Clock, nullptr},
      {{"count_calls", "--calls", nullptr, "count every call exactly (slower)"}, Kind::Switch, &RunSettings::count_calls},
      {{"full_stacks", "--full-stacks", nullptr, "keep every sample, not only the call tree"}, Kind::Switch, &RunSettings::full_stacks},
      {{"lines", "--lines", nullptr,
        "sample the running line in LuaJIT's compiled code too (safe points at every line: up to 1.6x there)"},
       Kind::Switch, &RunSettings::lines},
      {{"gc", "--gc", nullptr, "also sample the stack after every garbage collection (statprof's gcprof)"},
       Kind::Switch, &RunSettings::gc_samples},
      {{"alloc", "--alloc", "BYTES", "also sample the stack every BYTES allocated on average (space profile)"},
       Kind::Bytes, nullptr},
      {{"heap", "--heap", "BYTES", "a served run keeps a block every BYTES allocated until freed: the in-use heap (true: 524288)"},
       Kind::Heap, nullptr},
      {{"max_samples", "--max-samples", "N", "stop collecting after N samples per profile (default 100000, 0: no bound)"},
       Kind::Bound, nullptr},
      {{"interpret_closures", "--interpret-closures", nullptr, "keep closures of one function apart"},
       Kind::Switch, &RunSettings::interpret_closures},
      {{"start_sampling", nullptr, nullptr, "false: start suspended, until start_sampling()"}, Kind::Switch,
       &RunSettings::start_sampling},
      {{"signal", "--signal", "SIG", "the signal the timer delivers with (default SIGRTMAX-3; the program keeps its own)"},
       Kind::Signal, nullptr},
  };
  return table;
}

const Option* find(std::string_view name) {
  for (const auto& o : options())
    if (name == o.spec.name) return &o;
  return nullptr;
}

// The value as the error shows it: what the user wrote, or the type it had.
std::string shown(const OptionValue& v) {
  char buf[64];
  switch (v.type) {
    case OptionValue::Type::Boolean: return v.boolean ? "true" : "false";
    case OptionValue::Type::Integer: std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v.integer)); return buf;
    case OptionValue::Type::Number:
      if (std::isnan(v.number)) return "nan";
      std::snprintf(buf, sizeof buf, "%.14g", v.number);
      return buf;
    case OptionValue::Type::String: return "\"" + std::string(v.string) + "\"";
    case OptionValue::Type::Other: break;
  }
  return std::string("a ") + v.type_name;
}

bool refuse(std::string* error, const char* must, const OptionValue& v) {
  *error = std::string("must be ") + must + ", got " + shown(v);
  return false;
}

}  // namespace

const std::vector<RunOptionSpec>& run_option_specs() {
  static const std::vector<RunOptionSpec> specs = [] {
    std::vector<RunOptionSpec> s;
    for (const auto& o : options()) s.push_back(o.spec);
    return s;
  }();
  return specs;
}

bool is_run_option(std::string_view name) { return find(name) != nullptr; }

const std::string& run_option_names() {
  static const std::string names = [] {
    std::string n;
    for (const auto& o : options()) n += std::string(n.empty() ? "" : ", ") + o.spec.name;
    return n;
  }();
  return names;
}

bool period_of_hz(double hz, std::uint64_t* period_ns, std::string* error) {
  if (std::isnan(hz) || !(hz > 0.0) || hz > kMaxHz) return refuse(error, "a number in (0, 100000]", OptionValue::of_number(hz));
  *period_ns = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(1e9 / hz)));
  return true;
}

bool set_run_option(RunSettings* s, std::string_view name, const OptionValue& v, std::string* error) {
  const Option* o = find(name);
  if (!o) {
    *error = "unknown option '" + std::string(name) + "' (known: " + run_option_names() + ")";
    return false;
  }
  using T = OptionValue::Type;
  switch (o->kind) {
    case Kind::Switch:
      if (v.type != T::Boolean) return refuse(error, "a boolean", v);
      s->*(o->flag) = v.boolean;
      return true;
    case Kind::Rate:
      if (v.type == T::Boolean && !v.boolean) {
        s->sample_time = false;  // hz=false: no time sampling (gc or space only)
        return true;
      }
      if (v.type != T::Integer && v.type != T::Number) return refuse(error, "a number in (0, 100000] or false", v);
      if (!period_of_hz(v.number, &s->period_ns, error)) return false;
      s->sample_time = true;
      return true;
    case Kind::Clock:
      if (v.type == T::String && v.string == "cpu") s->clock = TimerClock::Cpu;
      else if (v.type == T::String && v.string == "wall") s->clock = TimerClock::Wall;
      else return refuse(error, "\"cpu\" or \"wall\"", v);
      return true;
    case Kind::Bytes:
      if (v.type == T::Boolean) s->alloc_bytes = v.boolean ? kDefaultAllocBytes : 0;
      else if (v.type == T::Integer && v.integer >= 1) s->alloc_bytes = static_cast<std::uint64_t>(v.integer);
      else return refuse(error, "true, false or the mean bytes between samples (an integer >= 1)", v);
      return true;
    case Kind::Heap:
      if (v.type == T::Boolean) s->heap = v.boolean;
      else if (v.type == T::Integer && v.integer >= 1) s->heap = true, s->heap_bytes = static_cast<std::uint64_t>(v.integer);
      else return refuse(error, "true, false or the mean bytes between sampled blocks (an integer >= 1)", v);
      return true;
    case Kind::Bound:
      if (v.type != T::Integer || v.integer < 0) return refuse(error, "an integer >= 0 (0: no bound)", v);
      s->max_samples = static_cast<std::uint64_t>(v.integer);
      return true;
    case Kind::Signal: {
      std::string text = v.type == T::String ? std::string(v.string) : v.type == T::Integer ? std::to_string(v.integer) : "";
      if (text.empty()) return refuse(error, "a signal: SIGRTMIN+N, SIGRTMAX-N, SIGPROF, SIGUSR1, SIGUSR2 or a number", v);
      std::string why;
      const int sig = parse_timer_signal(text, &why);
      if (!sig) {
        *error = why;
        return false;
      }
      s->signal = sig;
      return true;
    }
  }
  return false;
}

bool parse_run_option(RunSettings* s, std::string_view name, std::string_view text, std::string* error) {
  // Read the text as the value it spells: a boolean, an integer, a number, or else a string.
  OptionValue v = OptionValue::of_string(text);
  std::string t(text);
  if (t == "true" || t == "false") {
    v = OptionValue::of_bool(t == "true");
  } else if (!t.empty() && !std::isspace(static_cast<unsigned char>(t[0]))) {
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(t.c_str(), &end, 10);
    if (*end == '\0' && errno == 0) {
      v = OptionValue::of_int(i);
    } else {
      errno = 0;
      double d = std::strtod(t.c_str(), &end);
      if (*end == '\0' && errno == 0) v = OptionValue::of_number(d);
    }
  }
  return set_run_option(s, name, v, error);
}

}  // namespace scriptprof
