#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "scriptprof/interchange_formats.hpp"
#include "json_text.hpp"
#include "scriptprof/timeline.hpp"
#include "time_scale.hpp"

namespace scriptprof {

// "demo.lua thread 0: main": the file's name and the thread's label, as every report names it.
std::string profile_title(const Profile& p, const std::string& name, std::uint32_t thread) {
  return name + " " + thread_label_of(p, thread);
}

// A frame for speedscope: its label as the name (unique, and what every report calls it, so
// it reads back the same), with the file and line where known, and its compiled share.
nlohmann::json speedscope_frame(const Profile& p, FunctionId f) {
  const FunctionInfo& info = p.functions.info(f);
  nlohmann::json frame;
  frame["name"] = p.functions.label(f);
  if ((info.kind == FunctionKind::Script || info.kind == FunctionKind::Named) && !info.file.empty()) {
    frame["file"] = info.file;
    if (info.line > 0) frame["line"] = info.line;
  }
  // A JIT runtime's share of the function's own time that ran compiled (speedscope ignores
  // the field; our reader gives it back to the flat report's jit% column).
  const std::uint64_t self = p.counts(f).self;
  if (p.jit_shares && self > 0 && can_run_compiled(info))
    frame["compiled"] = static_cast<double>(p.counts(f).compiled) / static_cast<double>(self);
  return frame;
}

std::string write_speedscope(const Profile& p, const SpeedscopeOptions& o) {
  nlohmann::json frames = nlohmann::json::array();
  for (FunctionId f = 0; f < p.functions.size(); ++f) frames.push_back(speedscope_frame(p, f));
  // Nanoseconds per unit of weight: the measured time per sample when known. A space
  // profile's weights are bytes and stay so. Weights are whole nanoseconds, written as
  // milliseconds with at most 6 decimals: no float noise, and the sum is exact.
  const bool bytes = p.clock == ClockKind::Alloc;
  const double ns = bytes ? 1.0 : written_sample_ns(p.total_seconds, p.sample_weight(), p.period_ns);
  const double unit = bytes ? 1.0 : 1e6;  // nanoseconds per unit written
  std::string name = p.name.empty() ? "scriptprof" : p.name;
  // Without full stacks the samples are the call tree's stacks, one each: speedscope's
  // time-order view would show an order that never happened, so the names say there is none.
  const std::string order_note = p.keep_samples || bytes ? "" : kSpeedscopeNoTimeOrder;

  nlohmann::json profiles = nlohmann::json::array();
  for (const auto& [thread, root] : p.tree.roots()) {
    // (leaf node, weight) in time order when kept, else in call tree order.
    std::vector<std::pair<NodeId, std::uint64_t>> seq;
    if (p.keep_samples) {
      for (const SampleRecord& r : p.samples)
        if (r.thread == thread) seq.emplace_back(r.leaf, r.weight);
    } else {
      std::vector<NodeId> todo{root};
      while (!todo.empty()) {
        NodeId n = todo.back();
        todo.pop_back();
        if (p.tree.node(n).self > 0) seq.emplace_back(n, p.tree.node(n).self);
        std::vector<NodeId> kids;
        for (NodeId c = p.tree.node(n).first_child; c != kNoNode; c = p.tree.node(c).next_sibling) kids.push_back(c);
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(*it);
      }
    }
    nlohmann::json samples = nlohmann::json::array(), weights = nlohmann::json::array();
    NodeId last = kNoNode;
    // Whole nanoseconds (bytes), held as doubles: exact to 2^53 ns (104 days), and a weight
    // read from a file may be far larger than any integer type holds once made nanoseconds.
    double total = 0, last_weight = 0;
    for (const auto& [leaf, w] : seq) {
      if (leaf == root) continue;  // outside any function: speedscope has no empty stacks
      const double weight = std::round(static_cast<double>(w) * ns);
      total += weight;
      if (o.merge_runs && leaf == last) {
        last_weight += weight;
        weights.back() = json_number(last_weight / unit);
        continue;
      }
      nlohmann::json stack = nlohmann::json::array();
      for (FunctionId f : p.tree.stack(leaf)) stack.push_back(f);
      samples.push_back(std::move(stack));
      weights.push_back(json_number(weight / unit));
      last_weight = weight;
      last = leaf;
    }
    profiles.push_back({{"type", "sampled"},
                        {"name", profile_title(p, name, thread) + order_note},
                        {"unit", bytes ? "bytes" : "milliseconds"},
                        {"startValue", 0},
                        {"endValue", json_number(total / unit)},
                        {"samples", std::move(samples)},
                        {"weights", std::move(weights)}});
  }
  nlohmann::json file = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                         {"version", "0.0.1"},
                         {"name", name + order_note},
                         {"activeProfileIndex", 0},
                         {"exporter", "scriptprof 0.1.0"},
                         {"scriptprof", time_scale_text(p, p.keep_samples)},  // the reader's time per sample
                         {"shared", {{"frames", std::move(frames)}}},
                         {"profiles", std::move(profiles)}};
  return json_dump(file) + "\n";
}

}  // namespace scriptprof

namespace scriptprof {

bool write_speedscope_evented(const Profile& p, std::string* out, std::string* error) {
  if (!p.keep_samples) {
    if (error) *error = no_timeline_message("evented speedscope needs");
    return false;
  }
  nlohmann::json frames = nlohmann::json::array();
  for (FunctionId f = 0; f < p.functions.size(); ++f) frames.push_back(speedscope_frame(p, f));
  std::string name = p.name.empty() ? "scriptprof" : p.name;
  nlohmann::json profiles = nlohmann::json::array();
  for (std::uint32_t thread : sampled_threads(p)) {
    nlohmann::json events = nlohmann::json::array();
    double end = 0;
    for (const TimelineEvent& e : thread_timeline(p, thread)) {
      double at = static_cast<double>(e.t_ns) / 1e6;
      end = std::max(end, at);
      events.push_back({{"type", e.open ? "O" : "C"}, {"frame", e.function}, {"at", json_number(at)}});
    }
    profiles.push_back({{"type", "evented"}, {"name", profile_title(p, name, thread)}, {"unit", "milliseconds"},
                        {"startValue", 0}, {"endValue", json_number(end)}, {"events", std::move(events)}});
  }
  nlohmann::json file = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                         {"version", "0.0.1"},
                         {"name", name},
                         {"exporter", "scriptprof 0.1.0"},
                         {"scriptprof", time_scale_text(p, true)},
                         {"shared", {{"frames", std::move(frames)}}},
                         {"profiles", std::move(profiles)}};
  *out = json_dump(file) + "\n";
  return true;
}

}  // namespace scriptprof
