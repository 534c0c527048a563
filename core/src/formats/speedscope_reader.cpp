// The speedscope reader, on RapidJSON's DOM (Debian rapidjson-dev, header only): several times
// nlohmann's parse speed on files that are mostly arrays of numbers. Every access is checked
// against the value's type first; RAPIDJSON_ASSERT throws as a last guard, never aborts.
#include <cmath>
#include <numeric>
#include <set>
#include <string>

#include "scriptprof/interchange_formats.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {
struct Fail {
  std::string message;
};
}  // namespace
}  // namespace scriptprof

#define RAPIDJSON_ASSERT(x) ((x) ? (void)0 : throw ::scriptprof::Fail{"malformed speedscope file"})
#define RAPIDJSON_NOEXCEPT_ASSERT(x)
#include <rapidjson/document.h>

namespace scriptprof {
namespace {

using Value = rapidjson::Value;

// Nanoseconds per unit; 0 for units that are not time.
double unit_ns(const std::string& unit) {
  if (unit == "nanoseconds") return 1;
  if (unit == "microseconds") return 1e3;
  if (unit == "milliseconds") return 1e6;
  if (unit == "seconds") return 1e9;
  return 0;
}

// obj[key], or nullptr when obj is not an object or has no such member.
const Value* member(const Value& obj, const char* key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::string string_or(const Value& obj, const char* key, const char* fallback) {
  const Value* v = member(obj, key);
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : fallback;
}

double number_or(const Value& obj, const char* key, double fallback) {
  const Value* v = member(obj, key);
  return v && v->IsNumber() ? v->GetDouble() : fallback;
}

const Value& required(const Value& obj, const char* key, const std::string& where) {
  const Value* v = member(obj, key);
  if (!v) throw Fail{"malformed speedscope file: " + where + " has no \"" + key + "\""};
  return *v;
}

}  // namespace

bool read_speedscope(std::string_view text, Profile* out, std::string* error, std::vector<std::string>* warnings) {
  *out = Profile{};
  try {
    rapidjson::Document file;
    // Iterative: a file nested 200,000 levels deep must be refused, not overflow the stack.
    file.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
    if (file.HasParseError()) throw Fail{"not valid JSON"};
    if (string_or(file, "$schema", "") != "https://www.speedscope.app/file-format-schema.json")
      throw Fail{"not a speedscope file (no \"$schema\": \"https://www.speedscope.app/file-format-schema.json\")"};
    const Value& frames = required(required(file, "shared", "the file"), "frames", "shared");
    if (!frames.IsArray()) throw Fail{"shared.frames must be an array"};
    std::vector<FunctionId> ids;
    std::vector<std::pair<FunctionId, double>> compiled_shares;  // ours: a JIT's share per frame
    for (rapidjson::SizeType i = 0; i < frames.Size(); ++i) {
      const Value& f = frames[i];
      const Value* name = member(f, "name");
      if (!name || !name->IsString()) throw Fail{"shared.frames[" + std::to_string(i) + "] needs a string \"name\""};
      FunctionInfo info;
      info.name.assign(name->GetString(), name->GetStringLength());
      info.kind = FunctionKind::Named;
      info.file = string_or(f, "file", "");
      if (const Value* line = member(f, "line"); line && line->IsInt()) info.line = line->GetInt();
      ids.push_back(out->add_function(std::move(info)));
      if (const Value* c = member(f, "compiled")) {
        if (!c->IsNumber() || !(c->GetDouble() >= 0 && c->GetDouble() <= 1))
          throw Fail{"shared.frames[" + std::to_string(i) + "].compiled must be a number in [0, 1]"};
        compiled_shares.emplace_back(ids.back(), c->GetDouble());
      }
    }
    auto frame_id = [&](const Value& v, const std::string& where) {
      if (!v.IsUint64() || v.GetUint64() >= ids.size()) throw Fail{where + ": frame index out of range"};
      return ids[static_cast<std::size_t>(v.GetUint64())];
    };
    // First pass: every stack (flat, one after the other) with its weight in ns, so one period
    // can serve them all.
    struct Raw {
      std::uint32_t thread;
      std::size_t first, n;  // its frames in `stacks`
      double ns;
      double start_ns;  // when it began, from its profile's start
    };
    std::vector<Raw> raw;
    std::vector<FunctionId> stacks;
    bool bytes = false;  // weights are bytes (Raw::ns holds them), not time
    const Value& profiles = required(file, "profiles", "the file");
    if (!profiles.IsArray()) throw Fail{"profiles must be an array"};
    const std::string file_name = without_order_note(string_or(file, "name", ""));
    std::set<std::uint32_t> numbers;  // threads taken
    for (rapidjson::SizeType pi = 0; pi < profiles.Size(); ++pi) {
      const Value& prof = profiles[pi];
      const std::string where = "profiles[" + std::to_string(pi) + "]";
      const std::string unit = string_or(prof, "unit", "none");
      double scale = unit_ns(unit);
      if (unit == "bytes") {
        bytes = true;  // a space profile: a weight is the bytes its sample stands for
        scale = 1;
      } else if (scale == 0) {
        scale = 1e6;  // counts: one unit per millisecond of "time"
        if (warnings) warnings->push_back(where + ": unit \"" + unit + "\" is not time: reading one unit as 1 ms");
      }
      // Ours are titled "FILE thread N: NAME": thread N again, named NAME. Any other title
      // names the next free number.
      std::string title = without_order_note(string_or(prof, "name", ""));
      if (!file_name.empty() && title.rfind(file_name + " ", 0) == 0) title.erase(0, file_name.size() + 1);
      std::uint32_t thread = 0;
      std::string thread_title;
      if (!parse_thread_label(title, &thread, &thread_title) || numbers.count(thread)) {
        thread = static_cast<std::uint32_t>(pi);
        while (numbers.count(thread)) ++thread;
        thread_title = title;
      }
      numbers.insert(thread);
      out->add_thread(thread, thread_title);
      const std::string type = string_or(prof, "type", "");
      if (type == "sampled") {
        const Value& samples = required(prof, "samples", where);
        const Value& weights = required(prof, "weights", where);
        if (!samples.IsArray() || !weights.IsArray() || samples.Size() != weights.Size())
          throw Fail{where + ": samples and weights must be arrays of the same length"};
        double start = 0;  // a sampled profile's samples follow each other
        for (rapidjson::SizeType si = 0; si < samples.Size(); ++si) {
          if (!weights[si].IsNumber() || weights[si].GetDouble() < 0)
            throw Fail{where + ".weights[" + std::to_string(si) + "] must be a non-negative number"};
          const Value& stack = samples[si];
          if (!stack.IsArray()) throw Fail{where + ".samples[" + std::to_string(si) + "] must be an array"};
          const std::size_t first = stacks.size();
          for (const Value& f : stack.GetArray())
            stacks.push_back(f.IsUint64() && f.GetUint64() < ids.size()
                                 ? ids[static_cast<std::size_t>(f.GetUint64())]
                                 : frame_id(f, where + ".samples[" + std::to_string(si) + "]"));
          raw.push_back({thread, first, stacks.size() - first, weights[si].GetDouble() * scale, start});
          start += weights[si].GetDouble() * scale;
        }
      } else if (type == "evented") {
        std::vector<FunctionId> stack;
        const double begin = number_or(prof, "startValue", 0.0);
        double last = begin;
        const Value& events = required(prof, "events", where);
        if (!events.IsArray()) throw Fail{where + ": events must be an array"};
        for (rapidjson::SizeType ei = 0; ei < events.Size(); ++ei) {
          const Value& ev = events[ei];
          const std::string w = where + ".events[" + std::to_string(ei) + "]";
          const Value* at_value = member(ev, "at");
          if (!at_value || !at_value->IsNumber()) throw Fail{w + " needs a number \"at\""};
          const double at = at_value->GetDouble();
          if (at < last) throw Fail{w + ": \"at\" goes back in time"};
          if (at > last && !stack.empty()) {
            raw.push_back({thread, stacks.size(), stack.size(), (at - last) * scale, (last - begin) * scale});
            stacks.insert(stacks.end(), stack.begin(), stack.end());
          }
          last = at;
          static const Value kNull;
          const Value* frame = member(ev, "frame");
          const FunctionId f = frame_id(frame ? *frame : kNull, w);
          const std::string kind = string_or(ev, "type", "");
          if (kind == "O") {
            stack.push_back(f);
          } else if (kind == "C") {
            if (stack.empty() || stack.back() != f) throw Fail{w + ": closes a frame that is not on top"};
            stack.pop_back();
          } else {
            throw Fail{w + ": type must be \"O\" or \"C\""};
          }
        }
        if (!stack.empty()) throw Fail{where + ": frames left open at the end"};
        out->clock = ClockKind::Wall;
      } else {
        throw Fail{where + ": type must be \"sampled\" or \"evented\""};
      }
    }
    double sum = 0;
    for (const Raw& r : raw) {
      sum += r.ns;
      if (!(sum < 4.6e18)) throw Fail{"weights add up to more than 2^62 ns"};
    }
    TimeScale scale;
    if (const Value* line = member(file, "scriptprof"); line && line->IsString())
      scale = parse_time_scale(std::string(line->GetString(), line->GetStringLength()));
    // A time profile's samples are in the order they came (speedscope's own "time order" view),
    // unless the file is ours from a run without full stacks, which lists them by call path:
    // kept, they are the timeline the chrome and lms formats need.
    out->keep_samples = !bytes && (!scale.found || scale.time_order);
    auto at = [](const Raw& r) { return static_cast<std::uint64_t>(std::llround(r.start_ns)); };
    if (bytes) {
      // Bytes are sample weights as they stand; the time line, when there, gives the mean
      // bytes between samples (its period) and the run's time.
      std::uint64_t period = 0;  // without the time line: their greatest common divisor
      for (const Raw& r : raw) {
        auto w = static_cast<std::uint64_t>(std::llround(r.ns));
        period = std::gcd(period, w);
        if (w > 0) out->add_sample(r.thread, 0, w, stacks.data() + r.first, r.n);
      }
      out->clock = ClockKind::Alloc;
      if (scale.found && scale.period_ns > 0) apply_time_scale(scale, out, scale.period_ns);
      else out->period_ns = period > 0 ? period : 1;
    } else if (scale.found && scale.period_ns > 0 && scale.samples > 0) {
      // Ours: the weights are samples times the time of one as its writer took it; give the
      // samples back.
      const double per_sample_ns = written_sample_ns(scale.total_seconds, scale.samples, scale.period_ns);
      for (const Raw& r : raw) {
        auto w = static_cast<std::uint64_t>(std::llround(r.ns / per_sample_ns));
        if (w > 0) out->add_sample(r.thread, at(r), w, stacks.data() + r.first, r.n);
      }
      apply_time_scale(scale, out, scale.period_ns);
    } else {
      // One period for the whole file: the greatest common divisor of the weights in ns.
      std::uint64_t period = 0;
      for (const Raw& r : raw) period = std::gcd(period, static_cast<std::uint64_t>(std::llround(r.ns)));
      if (period == 0) period = 1'000'000;
      out->period_ns = period;
      double total_ns = 0;
      for (const Raw& r : raw) {
        auto w = static_cast<std::uint64_t>(std::llround(r.ns)) / period;
        if (w == 0) continue;
        total_ns += static_cast<double>(w * period);
        out->add_sample(r.thread, at(r), w, stacks.data() + r.first, r.n);
      }
      out->total_seconds = total_ns / 1e9;
    }
    for (const auto& [f, share] : compiled_shares)
      out->restore_compiled(f, static_cast<std::uint64_t>(std::llround(share * static_cast<double>(out->counts(f).self))));
    out->name = without_order_note(string_or(file, "name", ""));
  } catch (const Fail& f) {
    if (error) *error = f.message;
    *out = Profile{};
    return false;
  }
  return true;
}

}  // namespace scriptprof
