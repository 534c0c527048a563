#include "html_text.hpp"
#include "scriptprof/live_page.hpp"

#include "scriptprof/interchange_formats.hpp"

namespace scriptprof {

std::string live_page(const Profile& recent, const LivePageView& view) {
  std::string page = write_html_flame_graph(recent);
  // The viewer's page has one <head> and one </head><body> (html_flame_graph.cpp's template).
  const std::string head = "<head>";
  if (view.refresh_seconds > 0) {
    const std::size_t at = page.find(head);
    if (at != std::string::npos)
      page.insert(at + head.size(), "<meta http-equiv=\"refresh\" content=\"" + std::to_string(view.refresh_seconds) + "\">");
  }
  std::string controls = "<div id=\"live\" style=\"padding:6px;margin-bottom:6px;background:#f4f4f4;border-radius:3px\">";
  controls += "<strong>live</strong>: " + html_text(view.about) + ". The last " + std::to_string(view.seconds) +
              " seconds, reloaded every " + std::to_string(view.refresh_seconds) + " s. Show ";
  for (int s : {10, 30, 60, 300})
    controls += "<a href=\"?seconds=" + std::to_string(s) + "\">" + std::to_string(s) + " s</a> ";
  controls += "<br>Continuous sampling: <strong id=\"rate\">" +
              (view.continuous_hz > 0 ? page_number(view.continuous_hz) + " Hz" : std::string("stopped")) + "</strong> ";
  controls += "<form method=\"post\" action=\"rate\" style=\"display:inline\"><input name=\"hz\" size=\"5\" value=\"" +
              page_number(view.continuous_hz > 0 ? view.continuous_hz : 19) +
              "\"> Hz <button id=\"start\">" + (view.continuous_hz > 0 ? "set rate" : "start") + "</button></form> ";
  controls += "<form method=\"post\" action=\"rate\" style=\"display:inline\"><input type=\"hidden\" name=\"hz\" value=\"0\">"
              "<button id=\"stop\">stop</button></form></div>";
  const std::string body = "</head><body>";
  const std::size_t at = page.find(body);
  if (at != std::string::npos) page.insert(at + body.size(), controls);
  return page;
}

}  // namespace scriptprof
