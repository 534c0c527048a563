#include <nlohmann/json.hpp>

#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/json_text.hpp"
#include "scriptprof/timeline.hpp"

namespace scriptprof {

bool write_chrome_trace(const Profile& p, std::string* out, std::string* error) {
  if (!p.keep_samples) {
    if (error) *error = "a Chrome trace needs the samples in time order: profile with full stacks (full_stacks=true, --full-stacks)";
    return false;
  }
  nlohmann::json events = nlohmann::json::array();
  const int pid = 1;
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1},
                    {"args", {{"name", p.name.empty() ? "scriptprof" : p.name}}}});
  for (std::uint32_t thread : sampled_threads(p)) {
    std::string name = thread_name(p, thread);
    if (name.empty()) name = "thread " + std::to_string(thread);
    const std::int64_t tid = static_cast<std::int64_t>(thread) + 1;  // tid 0 reads as "no thread" in viewers
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    for (const TimelineEvent& e : thread_timeline(p, thread)) {
      events.push_back({{"name", p.functions.label(e.function)},
                        {"cat", "lua"},
                        {"ph", e.open ? "B" : "E"},
                        {"ts", json_number(static_cast<double>(e.t_ns) / 1000.0)},
                        {"pid", pid},
                        {"tid", tid}});
    }
  }
  *out = json_dump(nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}) + "\n";
  return true;
}

}  // namespace scriptprof
