#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "directory_entries.hpp"
#include "scriptprof/atomic_file.hpp"

using scriptprof::write_file_atomically;

namespace {
std::string make_temp_dir() {
  char tmpl[] = "/tmp/scriptprof-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
int entries(const std::string& dir) { return directory_entries(dir); }
}  // namespace

TEST_CASE("writes a new file and replaces an old one whole - leaving no temporary behind") {
  std::string dir = make_temp_dir();
  std::string path = dir + "/report.txt";
  std::string error;
  REQUIRE(write_file_atomically(path, "first\n", &error));
  REQUIRE(write_file_atomically(path, "second\n", &error));
  CHECK(slurp(path) == "second\n");
  CHECK(entries(dir) == 1);
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0444) != 0);  // an ordinary readable file, not mkstemp's 0600
  unlink(path.c_str());
  rmdir(dir.c_str());
}

TEST_CASE("an unwritable path is a clear error naming the path - and nothing is left") {
  std::string error;
  CHECK_FALSE(write_file_atomically("/nonexistent-dir/x.txt", "data", &error));
  CHECK(error == "cannot write '/nonexistent-dir/x.txt': No such file or directory");
  std::string dir = make_temp_dir();
  // Renaming over a directory fails after the data was written: the temporary must go.
  std::string target = dir + "/sub";
  REQUIRE(mkdir(target.c_str(), 0700) == 0);
  CHECK_FALSE(write_file_atomically(target, "data", &error));
  CHECK(error.find("'" + target + "'") != std::string::npos);
  CHECK(entries(dir) == 1);
  rmdir(target.c_str());
  rmdir(dir.c_str());
}
