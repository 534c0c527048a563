// The profile server without an interpreter: a fake run whose feed the test fills when the
// server gives it a rate, asked over HTTP by cpp-httplib's client.
#include <catch2/catch.hpp>

#include <httplib.h>

#include "gunzip.hpp"
#include "host_port.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "scriptprof/frame_capture.hpp"
#include "scriptprof/live_profile.hpp"
#include "scriptprof/profile_server.hpp"
#include "scriptprof/recent_window.hpp"

using namespace scriptprof;
using live_test::gunzip;
using live_test::host_port;

namespace {

// A run that "samples" from a thread of its own while the server has given it a rate: hot
// three times for cold's once, one sample per period.
struct FakeRun {
  std::shared_ptr<LiveFeed> feed = std::make_shared<LiveFeed>();
  std::atomic<std::uint64_t> period{0};
  std::vector<std::uint64_t> periods_set;  // what the server asked, in order
  std::mutex periods_mutex;
  std::atomic<bool> quit{false};
  std::thread sampler;
  FakeRun() {
    feed->define_function(0, {"main", "w.lua", 1, 0, FunctionKind::Script});
    feed->define_function(1, {"hot", "w.lua", 5, 0, FunctionKind::Script});
    feed->define_function(2, {"cold", "w.lua", 9, 0, FunctionKind::Script});
    feed->name_thread(0, "main");
    sampler = std::thread([this] {
      // A game's frames: 5 samples (about 5 ms) a frame, every 8th frame 30 samples long.
      unsigned in_frame = 0, frame = 0;
      for (unsigned i = 0; !quit; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const std::uint64_t p = period.load();
        if (!p) continue;
        const FunctionId stack[] = {0, i % 4 == 3 ? FunctionId{2} : FunctionId{1}};
        feed->add_sample(0, stack, 2, 1, p);
        if (++in_frame >= (frame % 8 == 7 ? 30u : 5u)) {
          feed->mark_frame(0);
          in_frame = 0;
          ++frame;
        }
      }
    });
  }
  ~FakeRun() {
    quit = true;
    sampler.join();
  }
  ServedRun served(std::uint64_t heap_sample_bytes = 0) {
    ServedRun r;
    r.heap_sample_bytes = heap_sample_bytes;
    r.program = "w.lua";
    r.runtime = "Fake 1.0";
    r.feed = feed;
    r.set_period = [this](std::uint64_t ns) {
      period = ns;
      std::lock_guard<std::mutex> lock(periods_mutex);
      periods_set.push_back(ns);
    };
    return r;
  }
};

// A fake run served on a free port (keeping a heap sampled every `heap_sample_bytes`, if not
// 0), and a client for it.
struct Served {
  FakeRun run;
  ProfileServer server;
  std::unique_ptr<httplib::Client> client;
  explicit Served(const ServeSettings& settings = {}, std::uint64_t heap_sample_bytes = 0) : server(settings) {
    std::string error;
    REQUIRE(server.start("127.0.0.1:0", run.served(heap_sample_bytes), &error));
    const auto [host, port] = host_port(server.address());
    client = std::make_unique<httplib::Client>(host, port);
    client->set_read_timeout(30, 0);
  }
};

}  // namespace

TEST_CASE("Listen addresses: loopback unless one is given, and clear errors") {
  std::string host, error;
  int port = -1;
  CHECK((parse_listen_address(":6060", &host, &port, &error) && host == "127.0.0.1" && port == 6060));
  CHECK((parse_listen_address("6060", &host, &port, &error) && host == "127.0.0.1" && port == 6060));
  CHECK((parse_listen_address("0.0.0.0:0", &host, &port, &error) && host == "0.0.0.0" && port == 0));
  CHECK((parse_listen_address("[::1]:7000", &host, &port, &error) && host == "::1" && port == 7000));
  for (const char* bad : {"", "host:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http", "::1:80", "[::1]80"}) {
    INFO(bad);
    CHECK_FALSE(parse_listen_address(bad, &host, &port, &error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("The server answers a profile of the seconds asked, at the rate asked, and pauses after") {
  Served served;
  FakeRun& run = served.run;
  ProfileServer& server = served.server;
  httplib::Client& client = *served.client;
  client.set_read_timeout(20, 0);
  auto res = client.Get("/debug/pprof/profile?seconds=1&hz=500");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type") == "application/octet-stream");
  const std::string pb = gunzip(res->body);
  for (const char* name : {"hot (w.lua:5)", "cold (w.lua:9)", "cpu", "nanoseconds"}) {
    INFO(name);
    CHECK(pb.find(name) != std::string::npos);
  }
  {
    std::lock_guard<std::mutex> lock(run.periods_mutex);
    CHECK(run.periods_set == std::vector<std::uint64_t>{2'000'000, 0});  // 500 Hz, then paused
  }
  auto index = client.Get("/debug/pprof/");
  REQUIRE(index);
  CHECK(index->status == 200);
  CHECK(index->body.find("w.lua (Fake 1.0)") != std::string::npos);
  server.stop();
  CHECK_FALSE(server.serving());
}

TEST_CASE("The profile is built from the feed: weights, names and the period they came at") {
  LiveFeed feed;
  feed.define_function(0, {"main", "w.lua", 1, 0, FunctionKind::Script});
  feed.define_function(1, {"hot", "w.lua", 5, 0, FunctionKind::Script});
  const FunctionId stack[] = {0, 1};
  feed.add_sample(0, stack, 2, 3, 1'000'000);
  feed.add_sample(0, stack, 1, 1, 1'000'000);
  feed.add_sample(0, stack, 2, 1, 2'000'000);  // at half the rate: two ticks' worth
  feed.rename_function(1, "hotter");
  LiveProfileBuilder builder;
  const LiveFeed::Batch batch = feed.take();
  builder.learn(batch);
  const Profile p = builder.build(batch, "w.lua", ClockKind::Cpu, 1.0);
  CHECK(p.period_ns == 1'000'000);
  CHECK(p.sample_weight() == 6);
  CHECK(p.functions.label(1).find("hotter") != std::string::npos);
  CHECK(p.counts(1).self == 5);
  CHECK(feed.take().samples.empty());  // taken once
  LiveFeed tiny(64);  // room for no sample of two frames and more
  for (int i = 0; i < 10; ++i) tiny.add_sample(0, stack, 2, 1, 1'000'000);
  CHECK(tiny.take().dropped > 0);
}

TEST_CASE("Bad requests get 400 with the reason, and a second collection at once is refused") {
  FakeRun run;
  ProfileServer server;
  std::string error;
  REQUIRE(server.start("127.0.0.1:0", run.served(), &error));
  const auto [host, port] = host_port(server.address());
  httplib::Client client(host, port);
  for (const char* query : {"seconds=-5", "seconds=x", "seconds=4000", "hz=0", "hz=200000", "clock=wall", "clock=x"}) {
    INFO(query);
    auto res = client.Get((std::string("/debug/pprof/profile?") + query).c_str());
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(res->body.find(std::string(query).substr(0, std::string(query).find('='))) != std::string::npos);
  }
  auto first = std::async(std::launch::async, [&, host = host, port = port] {
    httplib::Client c(host, port);
    c.set_read_timeout(20, 0);
    auto r = c.Get("/debug/pprof/profile?seconds=2");
    return r ? r->status : -1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto second = client.Get("/debug/pprof/profile?seconds=1");
  REQUIRE(second);
  CHECK(second->status == 500);
  CHECK(second->body.find("already being collected") != std::string::npos);
  CHECK(first.get() == 200);
  auto missing = client.Get("/debug/pprof/goroutine");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(missing->body.find("Unknown profile: goroutine (scriptprof serves profile, heap and allocs") == 0);
  auto untracked = client.Get("/debug/pprof/heap");  // the fake run keeps no heap
  REQUIRE(untracked);
  CHECK(untracked->status == 404);
  CHECK(untracked->body.find("no run served keeps its heap: it is off unless") == 0);
}

TEST_CASE("The heap is served as of the run's last GC cycle, by allocation site") {
  Served served({}, 4096);
  FakeRun& run = served.run;
  httplib::Client& client = *served.client;
  auto early = client.Get("/debug/pprof/heap");
  REQUIRE(early);
  CHECK(early->status == 503);  // no cycle yet
  CHECK(early->body.find("no GC cycle has completed") == 0);
  HeapSnapshot heap;
  heap.sample_bytes = 4096;
  heap.cycles = 1;
  HeapSite site;
  site.frames = {0, 1};
  site.alloc_objects = 20, site.alloc_bytes = 20480, site.inuse_objects = 10, site.inuse_bytes = 10240;
  heap.sites.push_back(site);
  run.feed->publish_heap(heap);
  for (const char* page : {"/debug/pprof/heap", "/debug/pprof/allocs"}) {
    auto res = client.Get(page);
    REQUIRE(res);
    CHECK(res->status == 200);
    const std::string raw = gunzip(res->body);
    CHECK(raw.find("inuse_space") != std::string::npos);
    CHECK(raw.find("hot (w.lua:5)") != std::string::npos);
  }
  auto delta = client.Get("/debug/pprof/heap?seconds=5");
  REQUIRE(delta);
  CHECK(delta->status == 400);
  auto index = client.Get("/debug/pprof/");
  REQUIRE(index);
  CHECK(index->body.find("a block sampled every 4096 bytes") != std::string::npos);
}

TEST_CASE("Stopping the server ends a collection under way at once, and a taken port is an error") {
  FakeRun run;
  ProfileServer server;
  std::string error;
  REQUIRE(server.start("127.0.0.1:0", run.served(), &error));
  ProfileServer second;
  CHECK_FALSE(second.start(server.address(), run.served(), &error));
  CHECK(error.find("in use") != std::string::npos);
  const auto [host, port] = host_port(server.address());
  auto long_request = std::async(std::launch::async, [host = host, port = port] {
    httplib::Client c(host, port);
    c.set_read_timeout(60, 0);
    auto r = c.Get("/debug/pprof/profile?seconds=30");
    return r ? r->status : -1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto began = std::chrono::steady_clock::now();
  server.stop();
  CHECK(long_request.get() == 503);
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(5));
  CHECK(run.period == 0);  // the run got no rate after stop()
  // Started again on a fresh port, it serves again.
  REQUIRE(server.start("127.0.0.1:0", run.served(), &error));
  server.stop();
}

TEST_CASE("The recent window keeps 10 minutes at 19 Hz of 10,000 distinct stacks in 16 MiB") {
  RecentWindow window(600'000'000'000ull, std::size_t{16} << 20);
  const std::uint64_t period = 1'000'000'000ull / 19;
  // 10 minutes at 19 Hz (11,400 samples), 10,000 distinct stacks 20 frames deep, fed as a
  // server's collector does: a batch a second.
  std::uint64_t samples = 0;
  std::uint64_t t = 5'000'000'000ull;
  for (int second = 0; second < 600; ++second, t += 1'000'000'000ull) {
    LiveFeed::Batch batch;
    for (int i = 0; i < 19; ++i, ++samples) {
      const auto first = static_cast<std::uint32_t>(batch.frames.size());
      const std::uint64_t distinct = samples % 10'000;
      for (FunctionId depth = 0; depth < 20; ++depth)
        batch.frames.push_back(depth < 19 ? depth : static_cast<FunctionId>(100 + distinct));
      batch.samples.push_back({0, first, 20, 1, period});
    }
    window.add(t, batch);
  }
  INFO("bytes " << window.bytes());
  CHECK(window.bytes() <= (std::size_t{16} << 20));
  CHECK(window.dropped_ticks() == 0);
  auto all = window.collect(t, 600'000'000'000ull);
  std::uint64_t ticks = 0;
  for (const auto& s : all.samples) ticks += s.ticks;
  CHECK(ticks == samples);
  CHECK(all.samples.size() == 10'000);
  auto minute = window.collect(t, 60'000'000'000ull);
  ticks = 0;
  for (const auto& s : minute.samples) ticks += s.ticks;
  CHECK(ticks >= 60 * 19);
  CHECK(ticks <= 62 * 19);
  // Ten minutes on, the old samples are gone and so are their stacks.
  LiveFeed::Batch one;
  const FunctionId lone[] = {7};
  one.frames.assign(lone, lone + 1);
  one.samples.push_back({0, 0, 1, 1, period});
  window.add(t + 700'000'000'000ull, one);
  CHECK(window.collect(t + 700'000'000'000ull, 600'000'000'000ull).samples.size() == 1);
  CHECK(window.bytes() < 4096);
}

TEST_CASE("The recent window drops its oldest seconds when a high rate outgrows its bytes") {
  RecentWindow window(600'000'000'000ull, 256 * 1024);
  std::uint64_t t = 0;
  for (int second = 0; second < 30; ++second, t += 1'000'000'000ull) {
    LiveFeed::Batch batch;
    for (std::uint32_t i = 0; i < 1000; ++i) {  // 1 kHz, every stack new
      const auto first = static_cast<std::uint32_t>(batch.frames.size());
      batch.frames.push_back(static_cast<FunctionId>(second * 1000 + i));
      batch.samples.push_back({0, first, 1, 1, 1'000'000});
    }
    window.add(t, batch);
    CHECK(window.bytes() <= 256 * 1024 + 200 * 1024);  // the slot just filled stays, whole
  }
  CHECK(window.dropped_ticks() > 0);
  auto recent = window.collect(t, 1'000'000'000ull);
  CHECK(!recent.samples.empty());
}

TEST_CASE("Continuous mode: a rate between requests, and the recent seconds from memory") {
  FakeRun run;
  ServeSettings settings;
  settings.continuous_hz = 100;
  settings.window_seconds = 60;
  ProfileServer server(settings);
  std::string error;
  REQUIRE(server.start("127.0.0.1:0", run.served(), &error));
  const auto [host, port] = host_port(server.address());
  httplib::Client client(host, port);
  client.set_read_timeout(20, 0);
  CHECK(run.period == 10'000'000);  // served at 100 Hz from the start
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto recent = client.Get("/debug/scriptprof/recent?seconds=2");
  REQUIRE(recent);
  CHECK(recent->status == 200);
  const std::string pb = gunzip(recent->body);
  CHECK(pb.find("hot (w.lua:5)") != std::string::npos);
  CHECK(pb.find("cold (w.lua:9)") != std::string::npos);
  auto too_long = client.Get("/debug/scriptprof/recent?seconds=61");
  REQUIRE(too_long);
  CHECK(too_long->status == 400);
  auto window = client.Get("/debug/pprof/profile?seconds=1&hz=500");
  REQUIRE(window);
  CHECK(window->status == 200);
  {
    std::lock_guard<std::mutex> lock(run.periods_mutex);
    CHECK(run.periods_set == std::vector<std::uint64_t>{10'000'000, 2'000'000, 10'000'000});  // back to 100 Hz
  }
  auto index = client.Get("/debug/pprof/");
  REQUIRE(index);
  CHECK(index->body.find("recent") != std::string::npos);
  server.stop();
  CHECK(run.period == 0);
}

TEST_CASE("Without continuous mode the recent page says how to turn it on") {
  Served served;
  FakeRun& run = served.run;
  httplib::Client& client = *served.client;
  auto res = client.Get("/debug/scriptprof/recent");
  REQUIRE(res);
  CHECK(res->status == 404);
  CHECK(res->body.find("continuous") != std::string::npos);
  CHECK(run.period == 0);
}

TEST_CASE("The live page starts, stops and sets the rate of continuous sampling") {
  Served served;
  FakeRun& run = served.run;
  httplib::Client& client = *served.client;
  auto page = client.Get("/debug/scriptprof/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("id=\"rate\">stopped") != std::string::npos);
  CHECK(page->body.find("http-equiv=\"refresh\" content=\"5\"") != std::string::npos);
  auto start = client.Post("/debug/scriptprof/rate", "hz=50", "application/x-www-form-urlencoded");
  REQUIRE(start);
  CHECK(start->status == 303);
  CHECK(start->get_header_value("Location") == "/debug/scriptprof/");
  CHECK(run.period == 20'000'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  page = client.Get("/debug/scriptprof/?seconds=2&refresh=0");
  REQUIRE(page);
  CHECK(page->body.find("id=\"rate\">50 Hz") != std::string::npos);
  CHECK(page->body.find("hot (w.lua:5)") != std::string::npos);  // in the viewer's data
  CHECK(page->body.find("http-equiv=\"refresh\"") == std::string::npos);
  auto stop = client.Post("/debug/scriptprof/rate", "hz=0", "application/x-www-form-urlencoded");
  REQUIRE(stop);
  CHECK(stop->status == 303);
  CHECK(run.period == 0);
  for (const char* bad : {"hz=2000", "hz=-1", "hz=x", "hz="}) {
    auto res = client.Post("/debug/scriptprof/rate", bad, "application/x-www-form-urlencoded");
    REQUIRE(res);
    CHECK(res->status == 400);
  }
  auto bad_seconds = client.Get("/debug/scriptprof/?seconds=0");
  REQUIRE(bad_seconds);
  CHECK(bad_seconds->status == 400);
}

TEST_CASE("Slow frames: the frames over the budget and the worst, each its own flame graph") {
  Served served;
  FakeRun& run = served.run;
  httplib::Client& client = *served.client;
  client.set_read_timeout(30, 0);
  auto none = client.Get("/debug/scriptprof/frame?id=0");
  REQUIRE(none);
  CHECK(none->status == 404);
  for (const char* bad : {"hz=500", "budget_ms=x", "worst=999", "seconds=0"}) {
    auto res = client.Get((std::string("/debug/scriptprof/frames?") + bad).c_str());
    REQUIRE(res);
    CHECK(res->status == 400);
  }
  auto page = client.Get("/debug/scriptprof/frames?seconds=2&budget_ms=16.7&worst=3");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("id=\"histogram\"") != std::string::npos);
  {
    std::lock_guard<std::mutex> lock(run.periods_mutex);
    CHECK(run.periods_set.front() == 1'000'000);  // 1 kHz by default
  }
  // The long frames (30 samples, about 30 ms) are over the 16.7 ms budget: each listed.
  std::size_t over = 0;
  for (std::size_t at = 0; (at = page->body.find("<td>yes</td>", at)) != std::string::npos; ++at) ++over;
  INFO(page->body);
  CHECK(over >= 2);
  CHECK(page->body.find("href=\"frame?id=0\"") != std::string::npos);
  auto frame = client.Get("/debug/scriptprof/frame?id=0");
  REQUIRE(frame);
  CHECK(frame->status == 200);
  CHECK(frame->body.find("hot (w.lua:5)") != std::string::npos);
  auto pprof = client.Get("/debug/scriptprof/frame?id=0&format=pprof");
  REQUIRE(pprof);
  CHECK(gunzip(pprof->body).find("hot (w.lua:5)") != std::string::npos);
  auto again = client.Get("/debug/scriptprof/frames?last=1");
  REQUIRE(again);
  CHECK(again->body == page->body);
  auto out_of_range = client.Get("/debug/scriptprof/frame?id=9999");
  REQUIRE(out_of_range);
  CHECK(out_of_range->status == 400);
}

TEST_CASE("A window is cut at each thread's marks into whole frames") {
  LiveFeed::Batch window;
  const FunctionId a[] = {1}, b[] = {2};
  auto sample = [&](std::uint32_t thread, const FunctionId* f) {
    window.samples.push_back({thread, static_cast<std::uint32_t>(window.frames.size()), 1, 1, 1'000'000});
    window.frames.push_back(f[0]);
  };
  auto mark = [&](std::uint32_t thread, std::uint64_t ms) {
    window.frames_marked.push_back({thread, static_cast<std::uint32_t>(window.samples.size()), ms * 1'000'000});
  };
  sample(0, a);            // before thread 0's first mark: no whole frame
  mark(0, 0);
  sample(0, a);
  sample(1, b);            // thread 1's, never marked: in no frame
  sample(0, a);
  mark(0, 20);             // a 20 ms frame of two samples
  sample(0, b);
  mark(0, 25);             // a 5 ms frame of one
  FrameSplit split = split_frames(window, 16'700'000, 0);
  REQUIRE(split.durations_ns == std::vector<std::uint64_t>{20'000'000, 5'000'000});
  REQUIRE(split.kept.size() == 1);  // over budget only (worst 0)
  CHECK(split.kept[0].over_budget);
  CHECK(split.kept[0].samples.samples.size() == 2);
  split = split_frames(window, 0, 5);
  REQUIRE(split.kept.size() == 2);
  CHECK(split.kept[1].samples.frames == std::vector<FunctionId>{2});
}
