#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

#include "example_profile.hpp"
#include "scriptprof/profile_io.hpp"

using namespace scriptprof;

TEST_CASE("formats are guessed from their contents") {
  CHECK(guess_format("LispWorks Profiler Tree: x\n0|1|0|1|0|r\n") == "lispworks");
  CHECK(guess_format("main;a 3\n") == "folded");
  CHECK(guess_format("{\"json\": true}") == "");
  Profile p;
  std::string error;
  CHECK_FALSE(read_profile_text("{}", "", &p, &error));
  CHECK(error == "cannot tell the format (readable: lispworks, folded, speedscope, sampler, lms); name it");
}

TEST_CASE("every registered style and format renders the worked example") {
  auto e = test::worked_example();
  for (const auto& style : report_styles()) {
    std::string out, error;
    INFO(style);
    CHECK(render_report(e.profile, style, &out, &error));
    CHECK_FALSE(out.empty());
  }
  for (const auto& format : file_formats()) {
    std::string out, error;
    INFO(format);
    CHECK(render_format(e.profile, format, &out, &error));
    CHECK_FALSE(out.empty());
  }
  for (const auto& format : readable_formats()) {
    std::string out, error;
    INFO(format);
    REQUIRE(render_format(e.profile, format, &out, &error));
    Profile back;
    CHECK(guess_format(out) == format);
    CHECK(read_profile_text(out, "", &back, &error));
    CHECK(back.sample_weight() == (format == "lms" ? 1'000'000u : 10u));  // lms weights are microseconds
  }
  std::string out, error;
  CHECK_FALSE(render_report(e.profile, "nope", &out, &error));
  CHECK(error == "unknown report style 'nope' (known: flat, flat-guile2, tree, anomalies, gprof, gprof-callgraph, allegro, allegro-callgraph, call-counts, frames)");
  CHECK_FALSE(render_format(e.profile, "nope", &out, &error));
  CHECK(error == "unknown format 'nope' (known: lispworks, folded, speedscope, chrome, pprof, html, sampler, lms)");
}

TEST_CASE("reading files: errors name the path - and oversized files are refused") {
  char path[] = "/tmp/scriptprof-io-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << "LispWorks Profiler Tree: x\n0|1|0|1|0|r\n1|1|0|1|1|\n";
  Profile p;
  std::string error;
  CHECK(read_profile_file(path, "", &p, &error));
  CHECK_FALSE(read_profile_file(path, "", &p, &error, nullptr, 10));
  CHECK(error == "'" + std::string(path) + "' is 50 bytes, above the limit of 10 bytes");
  std::ofstream(path) << "LispWorks Profiler Tree: x\n0|1|0|1|0|r\n2|1|0|1|0|a\n";
  CHECK_FALSE(read_profile_file(path, "", &p, &error));
  CHECK(error == std::string(path) + ": line 3: depth 2 after depth 0 (a node's parent must precede it)");
  unlink(path);
  CHECK_FALSE(read_profile_file(path, "", &p, &error));
  CHECK(error == "cannot open '" + std::string(path) + "': No such file or directory");
}

TEST_CASE("pathological inputs are refused with a clear message - a 2 GB file and a tree a million levels deep") {
  char path[] = "/tmp/scriptprof-io-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  // A 2 GiB file that is one line (sparse: no disk is used): refused before anything is read.
  REQUIRE(ftruncate(fd, off_t{2} << 30) == 0);
  close(fd);
  Profile p;
  std::string error;
  CHECK_FALSE(read_profile_file(path, "", &p, &error));
  CHECK(error == "'" + std::string(path) + "' is 2147483648 bytes, above the limit of 1073741824 bytes");
  // A tree one level deeper than the default limit: refused at the line that passes it.
  {
    std::ofstream out(path, std::ios::trunc);
    out << "LispWorks Profiler Tree: x\n";
    for (int depth = 0; depth <= 1'000'001; ++depth) out << depth << "|1|0|1|0|f\n";
  }
  CHECK_FALSE(read_profile_file(path, "", &p, &error));
  CHECK(error.find(": line 1000003: ") != std::string::npos);
  CHECK(error.find("1000000") != std::string::npos);
  unlink(path);
}
