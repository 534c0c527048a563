// The shared test vectors and real Guile outputs (../shared/formats).
#pragma once
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace scriptprof::test {

inline std::string formats_file(const std::string& relative) {
  std::ifstream in(std::string(SCRIPTPROF_FORMATS_DIR) + "/" + relative, std::ios::binary);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace scriptprof::test
