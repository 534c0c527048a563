// The profile server's pages: Go's /debug/pprof endpoints and our /debug/scriptprof ones, each a
// handler of the request's parameters (400 with the reason for a bad one) over LiveCollection.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "html_text.hpp"
#include "scriptprof/frames_page.hpp"
#include "scriptprof/heap_profile.hpp"
#include "scriptprof/interchange_formats.hpp"
#include "scriptprof/live_page.hpp"
#include "server_impl.hpp"

namespace scriptprof {

bool parse_bounded(const std::string& name, const std::string& text, std::int64_t lo, std::int64_t hi,
                   std::int64_t* out, std::string* error) {
  bool digits = !text.empty() && text.size() <= 18;
  std::size_t i = text[0] == '-' ? 1 : 0;
  digits = digits && i < text.size();
  std::int64_t n = 0;
  for (; digits && i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') digits = false;
    else n = n * 10 + (text[i] - '0');
  }
  if (!digits) {
    *error = name + "=" + text + " is not a whole number";
    return false;
  }
  if (text[0] == '-') n = -n;
  if (n < lo || n > hi) {
    *error = name + "=" + text + " is out of range: give " + std::to_string(lo) + " to " + std::to_string(hi);
    return false;
  }
  *out = n;
  return true;
}

namespace {


void refuse(HttpResponse& res, int status, const std::string& why) {
  res.status = status;
  res.set_content(why + "\n", "text/plain; charset=utf-8");
}

// A pprof file as Go's handlers send one: a download named `name`.
void send_pprof(HttpResponse& res, const std::string& name, const std::string& bytes) {
  res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(bytes, "application/octet-stream");
}

void send_profile(HttpResponse& res, Profile& p, std::uint64_t start_unix_ns) {
  p.start_unix_ns = start_unix_ns;
  send_pprof(res, "profile", write_pprof(p));
}

// seconds= as Go reads it: absent or 0 is 30; else 1 to `most`. False (400 sent) otherwise.
bool seconds_param(const HttpRequest& req, HttpResponse& res, std::int64_t most, std::int64_t* seconds) {
  std::string error;
  *seconds = kDefaultSeconds;
  if (req.has_param("seconds") && !parse_bounded("seconds", req.get_param_value("seconds"), 0, most, seconds, &error)) {
    refuse(res, 400, error);
    return false;
  }
  if (*seconds == 0) *seconds = kDefaultSeconds;
  return true;
}

// The runs' clock, and a clock= asking for another refused (400 sent).
bool clock_param(const HttpRequest& req, HttpResponse& res, const std::vector<ServedRun>& runs, TimerClock* clock) {
  if (runs.empty()) {
    refuse(res, 503, "no run is served now: nothing to profile");
    return false;
  }
  *clock = runs.front().clock;
  const char* ours = *clock == TimerClock::Cpu ? "cpu" : "wall";
  if (!req.has_param("clock")) return true;
  const std::string asked = req.get_param_value("clock");
  if (asked != "cpu" && asked != "wall") {
    refuse(res, 400, "clock=" + asked + " is not a clock: give cpu or wall");
    return false;
  }
  if (asked != ours) {
    refuse(res, 400, "this program is served on the " + std::string(ours) + " clock: start serving with clock=" + asked +
                         " for " + asked + " profiles");
    return false;
  }
  return true;
}

// The heap's sampling interval of the runs that keep one (0: none does).
std::uint64_t heap_sample_bytes(const std::vector<ServedRun>& served) {
  for (const ServedRun& run : served)
    if (run.heap_sample_bytes) return run.heap_sample_bytes;
  return 0;
}

}  // namespace

void ProfileServer::Impl::index(HttpResponse& res) {
  const std::vector<ServedRun> served = collection->runs();
  const TimerClock clock = served.empty() ? TimerClock::Cpu : served.front().clock;
  const std::uint64_t period = served.empty() ? 10'000'000 : served.front().default_period_ns;
  const ServeSettings& settings = collection->settings();
  std::string page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>/debug/pprof/</title></head><body>\n";
  page += "<h1>/debug/pprof/</h1>\n<p>Sampled on the " + std::string(clock == TimerClock::Cpu ? "CPU" : "wall") +
          " clock by scriptprof: " + std::to_string(served.size()) + (served.size() == 1 ? " run" : " runs") + ".</p>\n<ul>\n";
  for (const ServedRun& run : served) {
    page += "<li>" + html_text(run.program) + " (" + html_text(run.runtime) + ")";
    if (!run.note.empty()) page += ". " + html_text(run.note);
    page += "</li>\n";
  }
  page += "</ul>\n<table>\n<tr><td><a href=\"profile?seconds=30\">profile</a></td><td>" +
          std::string(clock == TimerClock::Cpu ? "CPU" : "Wall-clock") +
          " profile of the next seconds of every run (seconds=N, default 30; hz=H, default " +
          std::to_string(1'000'000'000 / std::max<std::uint64_t>(1, period)) +
          "). After you get the profile file, use the go tool pprof command to investigate it.</td></tr>\n";
  const std::uint64_t heap_bytes = heap_sample_bytes(served);
  page += "<tr><td><a href=\"heap\">heap</a></td><td>Memory in use by allocation site as of the last completed GC "
          "cycle, and every allocation since serving began (alloc_space, alloc_objects): " +
          (heap_bytes ? "a block sampled every " + std::to_string(heap_bytes) + " bytes allocated on average, remembered until freed."
                      : std::string("off (serve with heap = true, or --heap 524288, to keep it).")) + "</td></tr>\n";
  page += "<tr><td><a href=\"allocs\">allocs</a></td><td>The same profile, shown by bytes allocated.</td></tr>\n";
  page += "<tr><td><a href=\"../scriptprof/recent?seconds=30\">recent</a></td><td>Continuous mode (" +
          (collection->continuous() ? page_number(collection->continuous_hz()) + " Hz now" : std::string("stopped now")) +
          "): the last seconds (seconds=N, default 30, at most " + std::to_string(settings.window_seconds) +
          "), from memory, at once.</td></tr>\n";
  page += "<tr><td><a href=\"../scriptprof/\">live</a></td><td>The flame graph of the last seconds, reloaded every "
          "few seconds, with the controls of continuous sampling.</td></tr>\n";
  page += "<tr><td><a href=\"../scriptprof/frames?seconds=10\">frames</a></td><td>Slow frames: the next seconds at 1 kHz "
          "(seconds=N, hz=H, budget_ms=16.7, worst=16) cut at the program's frame marks (profiler.frame()): a "
          "histogram of the frames' durations and each slow frame's own flame graph.</td></tr>\n";
  page += "</table>\n<p>Try <code>go tool pprof -http=: http://" + html_text(host) + ":" + std::to_string(port) +
          "/debug/pprof/profile?seconds=10</code></p>\n</body></html>\n";
  res.set_content(page, "text/html; charset=utf-8");
}

void ProfileServer::Impl::profile(const HttpRequest& req, HttpResponse& res) {
  std::int64_t seconds = 0, hz = 0;
  if (!seconds_param(req, res, kMaxSeconds, &seconds)) return;
  std::string error;
  if (req.has_param("hz") && !parse_bounded("hz", req.get_param_value("hz"), 1, kMaxHz, &hz, &error))
    return refuse(res, 400, error);
  TimerClock clock;
  if (!clock_param(req, res, collection->runs(), &clock)) return;
  std::unique_lock<std::mutex> one(collecting, std::try_to_lock);
  if (!one.owns_lock())  // Go's status for the same refusal
    return refuse(res, 500, "Could not enable CPU profiling: a profile is already being collected (one at a time)");
  const std::uint64_t start_unix_ns = clock_ns(CLOCK_REALTIME);
  const auto began = std::chrono::steady_clock::now();
  collection->begin_window(hz ? 1'000'000'000ull / static_cast<std::uint64_t>(hz) : 0);
  const bool whole = wait(std::chrono::seconds(seconds));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  Profile p = collection->end_window(clock, elapsed);
  if (!whole) return refuse(res, 503, "the profile server is stopping");
  send_profile(res, p, start_unix_ns);
}

void ProfileServer::Impl::live(const HttpRequest& req, HttpResponse& res) {
  std::string error;
  std::int64_t seconds = 10, refresh = 5;
  const auto most = static_cast<std::int64_t>(collection->settings().window_seconds);
  if (req.has_param("seconds") && !parse_bounded("seconds", req.get_param_value("seconds"), 1, most, &seconds, &error))
    return refuse(res, 400, error);
  if (req.has_param("refresh") && !parse_bounded("refresh", req.get_param_value("refresh"), 0, 3600, &refresh, &error))
    return refuse(res, 400, error);
  const std::vector<ServedRun> served = collection->runs();
  LivePageView view;
  view.seconds = static_cast<int>(seconds);
  view.refresh_seconds = static_cast<int>(refresh);
  view.continuous_hz = collection->continuous_hz();
  for (const ServedRun& run : served) view.about += (view.about.empty() ? "" : ", ") + run.program + " (" + run.runtime + ")";
  if (served.empty()) view.about = "no run is served now";
  Profile p;
  if (!served.empty() && collection->keeps_window())
    p = collection->recent(served.front().clock, static_cast<std::uint64_t>(seconds) * 1'000'000'000ull);
  p.name = served.empty() ? "scriptprof" : p.name;
  res.set_content(live_page(p, view), "text/html; charset=utf-8");
}

void ProfileServer::Impl::frames(const HttpRequest& req, HttpResponse& res) {
  if (req.has_param("last")) {  // the last capture again, without a new one
    std::lock_guard<std::mutex> lock(last_frames_mutex);
    if (!last_frames) return refuse(res, 404, "no capture yet: ask /debug/scriptprof/frames?seconds=N");
    return res.set_content(frames_page(*last_frames, last_frames_seconds, last_frames_hz), "text/html; charset=utf-8");
  }
  std::string error;
  std::int64_t seconds = 10, hz = 1000, worst = 16;
  double budget_ms = 16.7;
  if (req.has_param("seconds") && !parse_bounded("seconds", req.get_param_value("seconds"), 1, 600, &seconds, &error))
    return refuse(res, 400, error);
  if (req.has_param("hz") && !parse_bounded("hz", req.get_param_value("hz"), 1000, kMaxHz, &hz, &error))
    return refuse(res, 400, error + " (frames are captured at 1000 Hz or more)");
  if (req.has_param("worst") && !parse_bounded("worst", req.get_param_value("worst"), 0, 256, &worst, &error))
    return refuse(res, 400, error);
  if (req.has_param("budget_ms")) {
    const std::string text = req.get_param_value("budget_ms");
    char* end = nullptr;
    budget_ms = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(budget_ms >= 0 && budget_ms <= 10'000))
      return refuse(res, 400, "budget_ms=" + text + " is not a number of milliseconds from 0 to 10000");
  }
  TimerClock clock;
  if (!clock_param(req, res, collection->runs(), &clock)) return;
  std::unique_lock<std::mutex> one(collecting, std::try_to_lock);
  if (!one.owns_lock()) return refuse(res, 500, "a profile is already being collected (one at a time)");
  collection->begin_window(1'000'000'000ull / static_cast<std::uint64_t>(hz));
  const bool whole = wait(std::chrono::seconds(seconds));
  auto captured = std::make_shared<LiveCollection::Frames>(collection->end_window_frames(
      clock, static_cast<std::uint64_t>(budget_ms * 1e6), static_cast<std::size_t>(worst)));
  if (!whole) return refuse(res, 503, "the profile server is stopping");
  {
    std::lock_guard<std::mutex> lock(last_frames_mutex);
    last_frames = captured;
    last_frames_seconds = static_cast<double>(seconds);
    last_frames_hz = static_cast<double>(hz);
  }
  res.set_content(frames_page(*captured, static_cast<double>(seconds), static_cast<double>(hz)), "text/html; charset=utf-8");
}

void ProfileServer::Impl::frame(const HttpRequest& req, HttpResponse& res) {
  std::shared_ptr<const LiveCollection::Frames> captured;
  {
    std::lock_guard<std::mutex> lock(last_frames_mutex);
    captured = last_frames;
  }
  if (!captured) return refuse(res, 404, "no capture yet: ask /debug/scriptprof/frames?seconds=N");
  std::string error;
  std::int64_t id = 0;
  const auto last = static_cast<std::int64_t>(captured->kept.size()) - 1;
  if (last < 0) return refuse(res, 404, "the last capture kept no frame");
  if (!req.has_param("id") || !parse_bounded("id", req.get_param_value("id"), 0, last, &id, &error))
    return refuse(res, 400, req.has_param("id") ? error : "give id=N, a frame of the last capture (0 to " + std::to_string(last) + ")");
  Profile p = captured->kept[static_cast<std::size_t>(id)].profile;
  const std::string format = req.has_param("format") ? req.get_param_value("format") : "html";
  if (format == "pprof") return send_profile(res, p, clock_ns(CLOCK_REALTIME));
  if (format != "html") return refuse(res, 400, "format=" + format + " is not one of html, pprof");
  res.set_content(write_html_flame_graph(p), "text/html; charset=utf-8");
}

void ProfileServer::Impl::heap(const HttpRequest& req, HttpResponse& res, bool allocs) {
  const std::vector<ServedRun> served = collection->runs();
  if (served.empty()) return refuse(res, 503, "no run is served now: nothing to profile");
  if (!heap_sample_bytes(served)) {
    return refuse(res, 404, "no run served keeps its heap: it is off unless serving starts with it "
                            "(profiler.serve{heap = true}, --heap 524288, the heap option), on a runtime that "
                            "reports every free (Lua, LuaJIT; not AngelScript)");
  }
  // Go's delta profile (seconds=N) needs two snapshots N seconds apart: not served.
  if (req.has_param("seconds"))
    return refuse(res, 400, "seconds= is not served for the heap: it is the heap as of the last GC cycle");
  HeapProfile p = collection->heap(allocs);
  if (!p.cycles)
    return refuse(res, 503, "no GC cycle has completed since serving began (the heap is the one a completed cycle "
                            "left): ask again later, or call collectgarbage()");
  send_pprof(res, allocs ? "allocs" : "heap", write_heap_pprof(p));
}

void ProfileServer::Impl::rate(const HttpRequest& req, HttpResponse& res) {
  const std::string text = req.has_param("hz") ? req.get_param_value("hz") : "";
  char* end = nullptr;
  const double hz = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(hz >= 0 && hz <= 1000))
    return refuse(res, 400, "hz=" + text + " is not a rate from 0 (stop) to 1000 Hz");
  collection->set_continuous(hz);
  res.status = 303;  // back to the page, which shows the new rate
  res.set_header("Location", "/debug/scriptprof/");
}

void ProfileServer::Impl::recent(const HttpRequest& req, HttpResponse& res) {
  if (!collection->keeps_window())
    return refuse(res, 404, "continuous mode is off: serve with continuous = 19 (Hz), or start it on the live page "
                            "(/debug/scriptprof/), to keep the recent minutes");
  std::int64_t seconds = 0;
  const auto most = static_cast<std::int64_t>(collection->settings().window_seconds);
  if (!seconds_param(req, res, most, &seconds)) return;
  TimerClock clock;
  if (!clock_param(req, res, collection->runs(), &clock)) return;
  Profile p = collection->recent(clock, static_cast<std::uint64_t>(seconds) * 1'000'000'000ull);
  send_profile(res, p, clock_ns(CLOCK_REALTIME) - static_cast<std::uint64_t>(seconds) * 1'000'000'000ull);
}

// Every request, of any method: Go's pages and ours; 404 with what is served for the rest.
void ProfileServer::Impl::route(const HttpRequest& req, HttpResponse& res) {
  const std::string& path = req.path;
  const bool get = req.method == "GET";
  if (get && (path == "/debug/pprof/" || path == "/debug/pprof")) return index(res);
  if (get && path == "/debug/pprof/profile") return profile(req, res);
  if (get && path == "/debug/scriptprof/recent") return recent(req, res);
  if (get && (path == "/debug/scriptprof/" || path == "/debug/scriptprof")) return live(req, res);
  if (req.method == "POST" && path == "/debug/scriptprof/rate") return rate(req, res);
  if (get && path == "/debug/scriptprof/frames") return frames(req, res);
  if (get && path == "/debug/scriptprof/frame") return frame(req, res);
  if (get && path == "/debug/pprof/heap") return heap(req, res, false);
  if (get && path == "/debug/pprof/allocs") return heap(req, res, true);
  // Go's other profiles say what is served.
  static const char* const kGoProfiles[] = {"goroutine", "block", "mutex", "threadcreate", "cmdline", "symbol", "trace"};
  const std::string go_prefix = "/debug/pprof/";
  for (const char* name : kGoProfiles)
    if (get && path == go_prefix + name)
      return refuse(res, 404, "Unknown profile: " + std::string(name) +
                                  " (scriptprof serves profile, heap and allocs here, and recent, frames and the live "
                                  "page under /debug/scriptprof/)");
  refuse(res, 404, "no page " + path + " here: the profiles are listed at /debug/pprof/");
}

}  // namespace scriptprof
