#include <nlohmann/json.hpp>

#include <cmath>
#include <numeric>

#include "scriptprof/interchange_formats.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {

// Nanoseconds per unit; 0 for units that are not time.
double unit_ns(const std::string& unit) {
  if (unit == "nanoseconds") return 1;
  if (unit == "microseconds") return 1e3;
  if (unit == "milliseconds") return 1e6;
  if (unit == "seconds") return 1e9;
  return 0;
}

struct Fail {
  std::string message;
};

}  // namespace

bool read_speedscope(std::string_view text, Profile* out, std::string* error, std::vector<std::string>* warnings) {
  *out = Profile{};
  nlohmann::json file = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (file.is_discarded()) {
    if (error) *error = "not valid JSON";
    return false;
  }
  try {
    if (!file.is_object() || file.value("$schema", "") != "https://www.speedscope.app/file-format-schema.json")
      throw Fail{"not a speedscope file (no \"$schema\": \"https://www.speedscope.app/file-format-schema.json\")"};
    const auto& frames = file.at("shared").at("frames");
    if (!frames.is_array()) throw Fail{"shared.frames must be an array"};
    std::vector<FunctionId> ids;
    std::vector<std::pair<FunctionId, double>> compiled_shares;  // ours: a JIT's share per frame
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const auto& f = frames[i];
      if (!f.is_object() || !f.contains("name") || !f["name"].is_string())
        throw Fail{"shared.frames[" + std::to_string(i) + "] needs a string \"name\""};
      FunctionInfo info;
      info.name = f["name"].get<std::string>();
      info.kind = FunctionKind::Named;
      if (f.contains("file") && f["file"].is_string()) info.file = f["file"].get<std::string>();
      if (f.contains("line") && f["line"].is_number_integer()) info.line = f["line"].get<int>();
      ids.push_back(out->add_function(std::move(info)));
      if (f.contains("compiled")) {
        const auto& c = f["compiled"];
        if (!c.is_number() || !(c.get<double>() >= 0 && c.get<double>() <= 1))
          throw Fail{"shared.frames[" + std::to_string(i) + "].compiled must be a number in [0, 1]"};
        compiled_shares.emplace_back(ids.back(), c.get<double>());
      }
    }
    auto frame_id = [&](const nlohmann::json& v, const std::string& where) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::uint64_t>() >= ids.size())
        throw Fail{where + ": frame index out of range"};
      return ids[v.get<std::size_t>()];
    };
    // First pass: the unit of every weight, so one period can serve them all.
    struct Raw { std::uint32_t thread; std::vector<FunctionId> stack; double ns; };
    std::vector<Raw> raw;
    const auto& profiles = file.at("profiles");
    if (!profiles.is_array()) throw Fail{"profiles must be an array"};
    for (std::size_t pi = 0; pi < profiles.size(); ++pi) {
      const auto& prof = profiles[pi];
      std::string where = "profiles[" + std::to_string(pi) + "]";
      std::string unit = prof.value("unit", "none");
      double scale = unit_ns(unit);
      if (scale == 0) {
        scale = 1e6;  // counts or bytes: one unit per millisecond of "time"
        if (warnings && unit != "bytes")
          warnings->push_back(where + ": unit \"" + unit + "\" is not time: reading one unit as 1 ms");
      }
      auto thread = static_cast<std::uint32_t>(pi);
      out->add_thread(thread, prof.value("name", ""));
      std::string type = prof.value("type", "");
      if (type == "sampled") {
        const auto& samples = prof.at("samples");
        const auto& weights = prof.at("weights");
        if (!samples.is_array() || !weights.is_array() || samples.size() != weights.size())
          throw Fail{where + ": samples and weights must be arrays of the same length"};
        for (std::size_t si = 0; si < samples.size(); ++si) {
          if (!weights[si].is_number() || weights[si].get<double>() < 0)
            throw Fail{where + ".weights[" + std::to_string(si) + "] must be a non-negative number"};
          if (!samples[si].is_array()) throw Fail{where + ".samples[" + std::to_string(si) + "] must be an array"};
          Raw r{thread, {}, weights[si].get<double>() * scale};
          for (const auto& f : samples[si]) r.stack.push_back(frame_id(f, where + ".samples[" + std::to_string(si) + "]"));
          raw.push_back(std::move(r));
        }
      } else if (type == "evented") {
        std::vector<FunctionId> stack;
        double last = prof.value("startValue", 0.0);
        const auto& events = prof.at("events");
        if (!events.is_array()) throw Fail{where + ": events must be an array"};
        for (std::size_t ei = 0; ei < events.size(); ++ei) {
          const auto& ev = events[ei];
          std::string w = where + ".events[" + std::to_string(ei) + "]";
          if (!ev.is_object() || !ev.contains("at") || !ev["at"].is_number()) throw Fail{w + " needs a number \"at\""};
          double at = ev["at"].get<double>();
          if (at < last) throw Fail{w + ": \"at\" goes back in time"};
          if (at > last && !stack.empty()) raw.push_back({thread, stack, (at - last) * scale});
          last = at;
          FunctionId f = frame_id(ev.value("frame", nlohmann::json()), w);
          std::string kind = ev.value("type", "");
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
    if (file.contains("scriptprof") && file["scriptprof"].is_string())
      scale = parse_time_scale(file["scriptprof"].get<std::string>());
    if (scale.found && scale.period_ns > 0 && scale.samples > 0 && scale.total_seconds > 0) {
      // Ours: the weights are samples times the measured time of one; give the samples back.
      double per_sample_ns = scale.total_seconds * 1e9 / static_cast<double>(scale.samples);
      for (const Raw& r : raw) {
        auto w = static_cast<std::uint64_t>(std::llround(r.ns / per_sample_ns));
        if (w > 0) out->add_sample(r.thread, 0, w, r.stack.data(), r.stack.size());
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
        out->add_sample(r.thread, 0, w, r.stack.data(), r.stack.size());
      }
      out->total_seconds = total_ns / 1e9;
    }
    for (const auto& [f, share] : compiled_shares)
      out->restore_compiled(f, static_cast<std::uint64_t>(std::llround(share * static_cast<double>(out->counts(f).self))));
    out->name = file.value("name", "");
  } catch (const Fail& f) {
    if (error) *error = f.message;
    return false;
  } catch (const nlohmann::json::exception& e) {
    if (error) *error = std::string("malformed speedscope file: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace scriptprof
