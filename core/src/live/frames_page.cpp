#include "html_text.hpp"
#include "scriptprof/frames_page.hpp"

#include <algorithm>
#include <cstdio>

namespace scriptprof {

namespace {

std::string ms(std::uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(ns) / 1e6);
  return text;
}

}  // namespace

std::string frames_page(const LiveCollection::Frames& frames, double seconds, double hz) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>slow frames</title><style>"
      "body{font:12px system-ui,sans-serif;margin:8px}#histogram{display:flex;align-items:flex-end;height:160px;gap:1px;"
      "border-bottom:1px solid #999;margin:8px 0}.bar{flex:1;background:#9ca3af;min-height:1px}.bar.over{background:#dc2626}"
      "a.bar:hover{background:#d946ef}table{border-collapse:collapse;font-family:monospace}td,th{padding:1px 8px;"
      "text-align:right;border-bottom:1px solid #eee}</style></head><body>\n";
  char head[256];
  std::snprintf(head, sizeof head, "<h3>Frames of the last %.0f s at %.0f Hz: %zu whole frames, budget %s ms</h3>\n",
                seconds, hz, frames.durations_ns.size(), ms(frames.budget_ns).c_str());
  page += head;
  if (frames.durations_ns.empty()) {
    page += "<p>No whole frame: the program marks none (profiler.frame(), scriptprof_frame()), or ran less than "
            "two marks in the window.</p>\n</body></html>\n";
    return page;
  }
  // 40 bins from 0 to the longest; a bin holding a kept frame links to the longest it holds.
  const std::uint64_t longest = *std::max_element(frames.durations_ns.begin(), frames.durations_ns.end());
  const std::size_t bins = 40;
  const std::uint64_t width = std::max<std::uint64_t>(1, longest / bins + 1);
  std::vector<std::size_t> count(bins, 0);
  for (std::uint64_t d : frames.durations_ns) ++count[std::min<std::size_t>(bins - 1, d / width)];
  std::vector<int> link(bins, -1);
  for (std::size_t i = frames.kept.size(); i-- > 0;) link[std::min<std::size_t>(bins - 1, frames.kept[i].duration_ns / width)] = static_cast<int>(i);
  const std::size_t most = *std::max_element(count.begin(), count.end());
  page += "<div id=\"histogram\">";
  for (std::size_t b = 0; b < bins; ++b) {
    const std::string title = std::to_string(count[b]) + " frames of " + ms(b * width) + " to " + ms((b + 1) * width) + " ms";
    const std::string style = "height:" + std::to_string(count[b] ? 1 + 159 * count[b] / most : 0) + "px";
    const bool over = frames.budget_ns && (b + 1) * width > frames.budget_ns;
    const std::string cls = std::string("bar") + (over ? " over" : "");
    if (link[b] >= 0)
      page += "<a class=\"" + cls + "\" style=\"" + style + "\" title=\"" + title + ": open the longest\" href=\"frame?id=" +
              std::to_string(link[b]) + "\"></a>";
    else
      page += "<div class=\"" + cls + "\" style=\"" + style + "\" title=\"" + title + "\"></div>";
  }
  page += "</div><p>0 ms to " + ms(longest) + " ms; red: over the budget. Click a bar to open its longest frame.</p>\n";
  page += "<table><tr><th>#</th><th>thread</th><th>ms</th><th>over budget</th><th>samples</th><th></th></tr>\n";
  for (std::size_t i = 0; i < frames.kept.size(); ++i) {
    const LiveCollection::FrameRecord& f = frames.kept[i];
    const std::string id = std::to_string(i);
    page += "<tr><td>" + id + "</td><td>" + html_text(f.program) + " thread " + std::to_string(f.thread) + "</td><td>" +
            ms(f.duration_ns) + "</td><td>" + (f.over_budget ? "yes" : "") + "</td><td>" +
            std::to_string(f.profile.sample_weight()) + "</td><td><a href=\"frame?id=" + id +
            "\">flame graph</a> <a href=\"frame?id=" + id + "&amp;format=pprof\">pprof</a></td></tr>\n";
  }
  page += "</table>\n</body></html>\n";
  return page;
}

}  // namespace scriptprof
