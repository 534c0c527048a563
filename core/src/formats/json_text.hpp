// JSON output rules shared by the JSON writers (FORMATS.md 0.2, 0.7).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace scriptprof {

// Integral values as integers, never NaN or infinity (0 instead).
nlohmann::json json_number(double x);

// Compact text; bytes that are not valid UTF-8 (Lua strings are bytes) become U+FFFD.
std::string json_dump(const nlohmann::json& value);

}  // namespace scriptprof
