#include <nlohmann/json.hpp>

#include "scriptprof/interchange_formats.hpp"
#include "json_text.hpp"
#include "time_scale.hpp"
#include "scriptprof/timeline.hpp"

namespace scriptprof {

// Events are written as text one by one: a trace of a million deep samples has tens of millions
// of events, and a JSON document of them all costs several times the text in memory and time.
// Keys come in the order a JSON object of the same event would print (sorted).
bool write_chrome_trace(const Profile& p, std::string* out, std::string* error) {
  if (!p.keep_samples) {
    if (error) *error = no_timeline_message("a Chrome trace needs");
    return false;
  }
  const int pid = 1;
  std::string text = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  text += json_dump({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1},
                     {"args", {{"name", p.name.empty() ? "scriptprof" : p.name}}}});
  std::vector<std::string> quoted(p.functions.size());  // each label escaped once
  for (std::uint32_t thread : sampled_threads(p)) {
    const std::string name = thread_label_of(p, thread);
    const std::int64_t tid = static_cast<std::int64_t>(thread) + 1;  // tid 0 reads as "no thread" in viewers
    text += ',';
    text += json_dump({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    const std::string tail = ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
    for (const TimelineEvent& e : thread_timeline(p, thread)) {
      std::string& label = quoted[e.function];
      if (label.empty()) label = json_dump(p.functions.label(e.function));
      text += ",{\"cat\":\"lua\",\"name\":";
      text += label;
      text += e.open ? ",\"ph\":\"B\"" : ",\"ph\":\"E\"";
      text += tail;
      text += json_dump(json_number(static_cast<double>(e.t_ns) / 1000.0));
      text += '}';
    }
  }
  text += "]}\n";
  *out = std::move(text);
  return true;
}

}  // namespace scriptprof
