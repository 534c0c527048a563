// What the host must never pay for on the file side: a deep stack goes through every writer,
// reader and report in time and memory linear in its depth; malformed, truncated or amplifying
// input is refused with a line that says where; names survive a round trip or are shown safely.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>

#include "scriptprof/atomic_file.hpp"
#include "scriptprof/folded_stacks.hpp"
#include "scriptprof/interval_formats.hpp"
#include "scriptprof/lispworks_tree.hpp"
#include "scriptprof/profile_diff.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/statprof_flat_report.hpp"
#include "scriptprof/statprof_tree_report.hpp"

using namespace scriptprof;

namespace {

// One stack `depth` frames deep, every frame a function of its own (the worst case for a
// writer that copies prefixes or scans the stack per frame), sampled at the leaf and at a few
// depths on the way (so reports see more than one path).
Profile deep_profile(std::size_t depth) {
  Profile p;
  std::vector<FunctionId> stack;
  stack.reserve(depth);
  for (std::size_t i = 0; i < depth; ++i)
    stack.push_back(p.add_function({"f" + std::to_string(i), "deep.lua", static_cast<int>(i + 1), 0, FunctionKind::Script}));
  p.add_sample(0, 0, 5, stack.data(), stack.size());
  p.add_sample(0, 0, 3, stack.data(), depth / 2);
  p.add_sample(0, 0, 2, stack.data(), 10);
  p.period_ns = 1'000'000;
  p.total_seconds = 0.01;
  return p;
}

std::size_t deepest(const Profile& p) {
  std::size_t d = 0;
  for (NodeId n = 0; n < p.tree.size(); ++n) d = std::max<std::size_t>(d, p.tree.node(n).depth);
  return d;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("a stack a million frames deep goes through every report and format and back") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const std::size_t depth = 200'000;  // the same paths; a sanitizer's run is several times slower
#else
  const std::size_t depth = 1'000'000;
#endif
  Profile p = deep_profile(depth);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& style : report_styles()) {
    std::string out, error;
    INFO(style);
    REQUIRE(render_report(p, style, &out, &error));
    // Linear output: a few lines a function at most; the tree report bounds its indentation
    // (2 x depth spaces a line would be a terabyte).
    CHECK(out.size() < 400 * depth);
  }
  for (const auto& format : file_formats()) {
    std::string out, error;
    INFO(format);
    // A format may refuse what it cannot hold (with a reason), never crash or take forever.
    if (!render_format(p, format, &out, &error)) {
      CHECK_FALSE(error.empty());
      continue;
    }
    CHECK_FALSE(out.empty());
    if (std::find(readable_formats().begin(), readable_formats().end(), format) == readable_formats().end()) continue;
    Profile back;
    std::string read_error;
    REQUIRE(read_profile_text(out, format, &back, &read_error));
    CHECK(back.sample_weight() == p.sample_weight());
    // The Sampler format caps a line at 1024 frames (leaf end kept); the others keep it all.
    CHECK(deepest(back) == (format == "sampler" ? 1024 : depth));
    if (format == "folded") CHECK(diff_report(p, back, 20).find("f999") != std::string::npos);  // profdiff's report
  }
  INFO("every report and format took " << seconds_since(t0) << " s");
  // Generous for a shared machine and the sanitizer builds; a quadratic walk of a million
  // frames takes hours.
  CHECK(seconds_since(t0) < 300);
}

TEST_CASE("the tree report keeps Guile's layout near the root and says the depth below 64") {
  Profile p = deep_profile(100);
  std::string text = statprof_tree_report(p);
  CHECK(text.rfind("100.0% f0 (deep.lua:1)\n  100.0% f1 (deep.lua:2)\n    100.0% f2", 0) == 0);  // two spaces a level
  CHECK(text.find(std::string(128, ' ') + "[99] ") != std::string::npos);
  CHECK(text.find(std::string(130, ' ')) == std::string::npos);
}

TEST_CASE("folded: any name reads back byte for byte (FORMATS 7.4)") {
  const std::vector<std::string> names = {
      " ", "", "a;b", "x\ny", "cr\r", "worker 2", "v 1.5", "trailing  ", "\t", "%", "100%25",
      "# scriptprof period_ns=1", "#hash", "(idle)", "tab\there", "plain name", "semi;;", "\\"};
  Profile p;
  std::vector<FunctionId> ids;
  for (const auto& n : names) ids.push_back(p.add_function({n, "", 0, 0, FunctionKind::Named}));
  // Each name alone (a one-frame stack), at the root and at the leaf of longer stacks.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    p.add_sample(0, 0, i + 1, &ids[i], 1);
    const FunctionId two[] = {ids[i], ids[(i + 1) % ids.size()]};
    p.add_sample(0, 0, 100 + i, two, 2);
  }
  const std::string text = write_folded(p);
  Profile back;
  std::string error;
  REQUIRE(read_folded(text, &back, &error));
  // The file carries labels (a function's name as reports show it): each comes back whole.
  std::set<std::string> got, want;
  for (FunctionId f = 0; f < back.functions.size(); ++f) got.insert(back.functions.info(f).name);
  for (FunctionId f = 0; f < p.functions.size(); ++f) want.insert(p.functions.label(f));
  CHECK(got == want);
  CHECK(back.sample_weight() == p.sample_weight());
  CHECK(back.empty_weight() == 0);  // a function named "(idle)" is not the idle marker
  // Written again, the same file: nothing was lost or renamed on the way.
  back.period_ns = p.period_ns;
  back.total_seconds = p.total_seconds;
  CHECK(write_folded(back) == text);
  // What ordinary names look like is unchanged (flamegraph.pl shows them as they are).
  CHECK(text.find("\nplain name;semi%3B%3B 115\n") != std::string::npos);
  CHECK(text.find("\n%23hash 13\n") != std::string::npos);
  CHECK(read_folded("# scriptprof period_ns=1 escape=percent\na%zz 1\n", &back, &error) == false);
  CHECK(error == "line 2: a '%' not followed by two hex digits in frame \"a%zz\"");
}

TEST_CASE("a LispWorks tree cut anywhere is refused with its line - never read as a smaller profile") {
  Profile p;
  const char* lines[] = {"main;update;physics;collide", "main;update;physics;integrate", "main;update;ai;think",
                         "main;render;draw_sprites", "main;render;present"};
  std::vector<FunctionId> frames;
  std::map<std::string, FunctionId> ids;
  std::uint64_t w = 7;
  for (const char* l : lines) {
    frames.clear();
    std::string s = l;
    for (std::size_t a = 0, b; a <= s.size(); a = b + 1) {
      b = s.find(';', a);
      if (b == std::string::npos) b = s.size();
      std::string name = s.substr(a, b - a);
      if (!ids.count(name)) ids[name] = p.add_function({name, "", 0, 0, FunctionKind::Named});
      frames.push_back(ids[name]);
    }
    p.add_sample(0, 0, w, frames.data(), frames.size());
    w += 5;
  }
  const std::string tree = write_lispworks_tree(p);
  Profile back;
  std::string error;
  REQUIRE(read_lispworks_tree(tree, &back, &error));
  std::size_t refused = 0;
  for (std::size_t cut = 1; cut < tree.size(); ++cut) {
    INFO("cut at byte " << cut << " of " << tree.size() << ": '" << tree.substr(cut > 20 ? cut - 20 : 0, 20) << "'");
    error.clear();
    const bool read = read_lispworks_tree(tree.substr(0, cut), &back, &error);
    CHECK_FALSE(read);
    CHECK(error.rfind("line ", 0) == 0);
    refused += !read;
  }
  CHECK(refused == tree.size() - 1);
}

TEST_CASE("a Sampler file that would be gigabytes is refused before any is built") {
  // 50 frames, 20 million ticks: 3.4 GB of lines from a 109-byte folded file.
  Profile p;
  std::vector<FunctionId> stack(50, p.add_function({"a", "", 0, 0, FunctionKind::Named}));
  p.add_sample(0, 0, 19'000'000, stack.data(), stack.size());
  std::string bytes, error;
  CHECK_FALSE(write_sampler(p, &bytes, &error));
  CHECK(error == "a Sampler file holds one line per tick, up to 1024 frames each: 19000000 ticks would take more "
                 "than the limit of 256 MiB");
  CHECK(bytes.empty());
}

TEST_CASE("a speedscope file nested 200000 levels deep is refused - not a stack overflow") {
  std::string text = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":";
  text += std::string(200'000, '[') + std::string(200'000, ']') + "},\"profiles\":[]}";
  Profile p;
  std::string error;
  CHECK_FALSE(read_profile_text(text, "speedscope", &p, &error));
  CHECK_FALSE(error.empty());
}

TEST_CASE("text reports show control characters from names - never pass them to the terminal") {
  Profile p;
  FunctionId evil = p.add_function({"\x1b[2Jevil\x1b]0;title\x07 \xc2\x9b", "", 0, 0, FunctionKind::Named});
  p.add_sample(0, 0, 3, &evil, 1);
  p.period_ns = 1'000'000;
  p.total_seconds = 0.003;
  for (const auto& style : report_styles()) {
    std::string out, error;
    INFO(style);
    REQUIRE(render_report(p, style, &out, &error));
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\x07') == std::string::npos);
    CHECK(out.find("\xc2\x9b") == std::string::npos);
  }
  std::string flat = statprof_flat_report(p);
  CHECK(flat.find("\\x1B[2Jevil\\x1B]0;title\\x07 \\u009B") != std::string::npos);
}

// The process umask is never changed, even for an instant: another thread of the host would
// create its files without its mask. This executable's umask() stands in front of libc's and
// counts the calls made through it (the library is linked statically into this test).
namespace {
std::atomic<int> g_umask_calls{0};
}
extern "C" mode_t umask(mode_t mask) {
  g_umask_calls.fetch_add(1);
  using Real = mode_t (*)(mode_t);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "umask"));
  return real(mask);
}

TEST_CASE("writing a file never changes the process umask - and the file gets the umask's mode") {
  char dir[] = "/tmp/scriptprof-umask-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const mode_t old = umask(027);
  const int before = g_umask_calls.load();
  std::string path = std::string(dir) + "/out.txt", error;
  REQUIRE(write_file_atomically(path, "x\n", &error));
  CHECK(g_umask_calls.load() == before);
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  umask(old);
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("fuzzer regression - a speedscope file is refused when its nanoseconds pass 2^62") {
  // Found by fuzz_roundtrip: 3,444,444,444,446 samples of 10 ms written as negative weights
  // (nanoseconds overflowed a 64-bit integer), which our own reader then refused.
  Profile p;
  FunctionId f = p.add_function({"f", "", 0, 0, FunctionKind::Named});
  p.add_sample(0, 0, 3'444'444'444'446ull, &f, 1);
  p.period_ns = 10'000'000;
  p.total_seconds = 34'444'444'444.46;
  std::string out, error;
  CHECK_FALSE(render_format(p, "speedscope", &out, &error));
  CHECK(error == "a speedscope file's weights are nanoseconds: 3444444444446 samples make more than 2^62 of them");
  // Just under the bound it is written and read back whole.
  p = Profile{};
  f = p.add_function({"f", "", 0, 0, FunctionKind::Named});
  p.add_sample(0, 0, 400'000'000'000ull, &f, 1);
  p.period_ns = 10'000'000;
  p.total_seconds = 4'000'000'000;
  REQUIRE(render_format(p, "speedscope", &out, &error));
  Profile back;
  REQUIRE(read_profile_text(out, "speedscope", &back, &error));
  CHECK(back.total_seconds == Approx(4e9));
}
